package persistence

import (
	"errors"
	"strings"
)

// The SQLite rebuild keeps a host's table definition as the host wrote it:
// SQLite exposes a table's CHECK constraints, collations and generated
// expressions only in the CREATE TABLE text of sqlite_master, so the
// rebuild reuses that text. It is split into its items (column
// definitions and table constraints) by a tokenizer that knows SQLite's
// quoting and comments; items are kept byte for byte, except the ones the
// amendment must change, which it recognises by their tokens alone. What
// the split cannot place is refused, and the rebuild verifies the result
// against the catalog before it commits.

// sqlToken is one token of SQL text: its bytes and, for a word or a quoted
// identifier, its name (unquoted, lower case).
type sqlToken struct {
	text  string
	ident string
	punct byte // '(', ')', ',' or 0
}

// errSQLText is a CREATE TABLE text the tokenizer cannot follow.
var errSQLText = errors.New("unbalanced quotes, comments or parentheses")

// tokenize splits SQL text into tokens, skipping whitespace and comments.
func tokenize(s string) ([]sqlToken, error) {
	var out []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, errSQLText
			}
			i += end + 4
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for {
				k := strings.IndexByte(s[j:], closer)
				if k < 0 {
					return nil, errSQLText
				}
				j += k + 1
				// A doubled quote is an escaped one (not for [...]).
				if closer != ']' && j < len(s) && s[j] == closer {
					j++
					continue
				}
				break
			}
			t := sqlToken{text: s[i:j]}
			if c != '\'' {
				inner := s[i+1 : j-1]
				if closer != ']' {
					inner = strings.ReplaceAll(inner, string(closer)+string(closer), string(closer))
				}
				t.ident = strings.ToLower(inner)
			}
			out = append(out, t)
			i = j
		case c == '(' || c == ')' || c == ',':
			out = append(out, sqlToken{text: s[i : i+1], punct: c})
			i++
		case isWordByte(c):
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			out = append(out, sqlToken{text: s[i:j], ident: strings.ToLower(s[i:j])})
			i = j
		default:
			out = append(out, sqlToken{text: s[i : i+1]})
			i++
		}
	}
	return out, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// tableItem is one item of a CREATE TABLE's list: its exact text and
// tokens, and for a column definition its name.
type tableItem struct {
	text   string
	tokens []sqlToken
	column string // "" for a table constraint
}

// tableDef is a CREATE TABLE text split into the list's items and the
// text after the closing parenthesis (WITHOUT ROWID, STRICT).
type tableDef struct {
	items []tableItem
	tail  string
}

// splitTableDef splits a CREATE TABLE text (as sqlite_master holds it).
// It works on the text's own bytes: every item is a substring of it.
func splitTableDef(sql string) (tableDef, error) {
	var def tableDef
	// Offsets of each token, found by re-scanning: tokenize keeps texts,
	// and tokens appear in order, so each is found after the previous.
	toks, err := tokenize(sql)
	if err != nil {
		return def, err
	}
	offs := make([]int, len(toks))
	pos := 0
	for i, t := range toks {
		k := strings.Index(sql[pos:], t.text)
		if k < 0 {
			return def, errSQLText
		}
		offs[i] = pos + k
		pos = offs[i] + len(t.text)
	}
	open := -1
	for i, t := range toks {
		if t.punct == '(' {
			open = i
			break
		}
		if t.ident == "as" {
			return def, errors.New("CREATE TABLE … AS SELECT has no column list")
		}
	}
	if open < 0 {
		return def, errSQLText
	}
	depth, start := 0, open+1
	for i := open; i < len(toks); i++ {
		switch toks[i].punct {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 1 && toks[i].punct == ',' || depth == 0 {
			if i == start {
				return def, errSQLText
			}
			it := tableItem{
				text:   strings.TrimSpace(sql[offs[start] : offs[i-1]+len(toks[i-1].text)]),
				tokens: toks[start:i],
			}
			if !isConstraintStart(toks[start].ident) || toks[start].text[0] == '"' || toks[start].text[0] == '`' || toks[start].text[0] == '[' {
				it.column = toks[start].ident
			}
			def.items = append(def.items, it)
			start = i + 1
		}
		if depth == 0 {
			def.tail = strings.TrimSpace(sql[offs[i]+1:])
			return def, nil
		}
	}
	return def, errSQLText
}

// isConstraintStart reports whether an item starting with word w (unquoted)
// is a table constraint rather than a column definition.
func isConstraintStart(w string) bool {
	switch w {
	case "constraint", "primary", "unique", "check", "foreign":
		return true
	}
	return false
}

// isUniqueOn reports whether item is a table constraint UNIQUE over
// exactly cols, in order (optionally named, optionally with ON CONFLICT).
func (it tableItem) isUniqueOn(cols []string) bool {
	toks := it.tokens
	if it.column != "" {
		return false
	}
	if len(toks) >= 2 && toks[0].ident == "constraint" {
		toks = toks[2:]
	}
	if len(toks) < 3 || toks[0].ident != "unique" || toks[1].punct != '(' {
		return false
	}
	var got []string
	i := 2
	for ; i < len(toks) && toks[i].punct != ')'; i++ {
		if toks[i].punct == ',' {
			continue
		}
		if toks[i].ident == "" {
			return false // an expression or a sort order: not this constraint
		}
		got = append(got, toks[i].ident)
	}
	return i < len(toks) && equalCols(got, cols)
}

// isPlainTextColumn reports whether a column item declares nothing but a
// type, NULL / NOT NULL and a DEFAULT literal: what the amendment may
// replace by the execution column's own definition without losing a host
// constraint.
func (it tableItem) isPlainTextColumn() bool {
	for _, t := range it.tokens[1:] {
		switch {
		case t.ident == "text", t.ident == "varchar", t.ident == "null", t.ident == "not", t.ident == "default":
		case t.ident == "" && t.punct == 0 && strings.HasPrefix(t.text, "'"):
		default:
			return false
		}
	}
	return true
}
