package main

import (
	"strings"
	"unicode"
)

// exportName turns a wire name into an exported Go identifier: every run of
// letters and digits separated by '_', '-', '/', '.', ' ' or '$' starts with an
// upper-case letter ("in_progress" → "InProgress", "utf-16" → "Utf16",
// "document/didChange" → "DocumentDidChange", "_meta" → "Meta").
func exportName(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			b.WriteRune(unicode.ToUpper(r))
			upper = false
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lowerFirst turns a JSON property name into a Go parameter name.
func lowerFirst(s string) string {
	n := exportName(s)
	if n == "" {
		return n
	}
	r := []rune(n)
	r[0] = unicode.ToLower(r[0])
	out := string(r)
	switch out {
	case "type", "func", "var", "range", "map", "chan", "go", "default", "case", "select", "interface", "package", "import", "return", "struct", "const", "continue", "break", "for", "if", "else", "switch", "defer", "fallthrough", "goto":
		return out + "_"
	}
	return out
}

// docComment renders text as a Go comment block, one "//" line per line.
func docComment(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString("//\n")
			continue
		}
		b.WriteString("// ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

// typeDoc starts a type's comment with its name, as Go convention wants,
// followed by the schema description.
func typeDoc(name, lead, description string) string {
	description = strings.TrimSpace(description)
	if description == "" {
		return docComment(name + " " + lead)
	}
	return docComment(name + " " + lead + "\n\n" + description)
}
