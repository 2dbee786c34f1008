package web

import (
	"regexp"
	"strings"
)

// pageElements are the elements the templates and app.js create; nothing
// agent-supplied can add another unless escaping failed.
var pageElements = map[string]bool{
	"html": true, "head": true, "meta": true, "title": true, "link": true, "script": true, "body": true,
	"header": true, "main": true, "section": true, "aside": true, "form": true, "label": true, "select": true,
	"option": true, "input": true, "button": true, "table": true, "thead": true, "tbody": true, "tr": true,
	"th": true, "td": true, "p": true, "h1": true, "h2": true, "code": true, "div": true, "span": true,
	"a": true, "ul": true, "ol": true, "li": true, "dl": true, "dt": true, "dd": true, "details": true,
	"summary": true,
}

var (
	markupTag    = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9-]*)([^>]*)>`)
	quotedValue  = regexp.MustCompile(`"[^"]*"`)
	handlerAttr  = regexp.MustCompile(`(?i)\son[a-z]+\s*=`)
	pageDataJSON = regexp.MustCompile(`(?s)<script type="application/json" id="page-data">.*?</script>`)
)

// InjectedMarkup lists what in a served page, or in a browser's dump of
// its DOM, only an escaping failure could have put there: an element the
// pages never create, an event-handler attribute, a javascript: URL, or a
// script element besides the page's two (the asset and the JSON data
// block). It relies on serialisers double-quoting attribute values with no
// raw '"' inside, as html/template and browsers do.
func InjectedMarkup(page string) []string {
	var out []string
	if n := strings.Count(strings.ToLower(page), "<script"); n != 2 {
		out = append(out, "script elements: "+strings.Repeat("I", n))
	}
	for _, m := range markupTag.FindAllStringSubmatch(pageDataJSON.ReplaceAllString(page, ""), -1) {
		attrs := quotedValue.ReplaceAllString(m[3], `""`)
		switch {
		case !pageElements[strings.ToLower(m[2])]:
			out = append(out, "element "+m[0])
		case handlerAttr.MatchString(attrs), strings.Contains(attrs, "'"):
			out = append(out, "attribute in "+m[0])
		case strings.Contains(strings.ToLower(m[3]), `href="javascript:`):
			out = append(out, "URL in "+m[0])
		}
	}
	return out
}
