package main

import (
	"fmt"
	"strings"
)

// The fast decoders (see fastdecode.go in the SDK): one decodeFast method per
// generated struct and union, parsing in one pass and giving up with
// errFallback wherever encoding/json's result could differ.

// fastEmitter writes decode code, naming temporaries uniquely.
type fastEmitter struct {
	b *w
	m *model
	n int
}

func (e *fastEmitter) tmp() string {
	e.n++
	return fmt.Sprintf("x%d", e.n)
}

// stringAliases are type aliases of string the model does not hold.
var stringAliases = map[string]bool{"MessageId": true, "TerminalId": true, "AuthMethodId": true}

// scalarKind returns the helper suffix (String, Int, Float, Bool) for a Go
// type that is, or is named after, a JSON scalar; "" for other types.
func (e *fastEmitter) scalarKind(goType string) string {
	switch goType {
	case "string":
		return "String"
	case "int":
		return "Int"
	case "float64":
		return "Float"
	case "bool":
		return "Bool"
	}
	if stringAliases[goType] {
		return "String"
	}
	if t := e.m.types[goType]; t != nil {
		switch {
		case t.Kind == kindEnum:
			return "String"
		case t.Kind == kindNamed && t.Underlying == "string":
			return "String"
		case t.Kind == kindNamed && t.Underlying == "int":
			return "Int"
		}
	}
	return ""
}

// hasFast reports whether goType is a generated struct or union with decodeFast.
func (e *fastEmitter) hasFast(goType string) bool {
	t := e.m.types[goType]
	return t != nil && (t.Kind == kindStruct || t.Kind == kindUnion)
}

// decodesNull reports whether goType is a union that decodes null itself,
// as a no-op (one without a null variant).
func (e *fastEmitter) decodesNull(goType string) bool {
	t := e.m.types[goType]
	return t != nil && t.Kind == kindUnion && unionNullVariant(t.Union) == nil
}

// field returns an expression decoding a struct field of goType into
// target with encoding/json's null rules (the helpers are in fastdecode.go),
// or ok=false for a struct value, which emitStructFast decodes in place.
func (e *fastEmitter) field(goType, target string) (expr string, ok bool) {
	switch {
	case e.scalarKind(goType) != "":
		return fmt.Sprintf("field%s(d, &%s)", e.scalarKind(goType), target), true
	case strings.HasPrefix(goType, "*"):
		return fmt.Sprintf("fieldPtr(d, &%s, %s)", target, e.elem(goType[1:])), true
	case strings.HasPrefix(goType, "[]"):
		return fmt.Sprintf("fieldSlice(d, &%s, %s)", target, e.elem(goType[2:])), true
	case e.decodesNull(goType):
		return target + ".decodeFast(d)", true
	case e.hasFast(goType):
		// A generic helper would take the field's address through an
		// interface call and move every decoded value to the heap.
		return "", false
	}
	return fmt.Sprintf("%s(d, &%s)", e.elem(goType), target), true
}

// elem returns a func(*fastDecoder, *goType) error decoding one non-null
// value (a list item, a pointer's target) for the generic helpers.
func (e *fastEmitter) elem(goType string) string {
	switch {
	case goType == "any":
		return "decodeAny"
	case goType == "map[string]any":
		return "decodeMapAny"
	case e.scalarKind(goType) != "":
		return fmt.Sprintf("elem%s[%s]", e.scalarKind(goType), goType)
	case strings.HasPrefix(goType, "*"):
		return fmt.Sprintf("func(d *fastDecoder, p *%s) error {\nreturn fieldPtr(d, p, %s)\n}", goType, e.elem(goType[1:]))
	case strings.HasPrefix(goType, "[]"):
		return fmt.Sprintf("func(d *fastDecoder, p *%s) error {\nreturn fieldSlice(d, p, %s)\n}", goType, e.elem(goType[2:]))
	case e.decodesNull(goType):
		return fmt.Sprintf("elemUnion[%s]", goType)
	case e.hasFast(goType):
		return fmt.Sprintf("elemFast[%s]", goType)
	}
	return fmt.Sprintf("elemRaw[%s]", goType)
}

func emitStructFast(b *w, m *model, t *goType) {
	e := &fastEmitter{b: b, m: m}
	b.p("// decodeFast decodes %s in one pass (see fastdecode.go).", t.Name)
	b.p("func (v *%s) decodeFast(d *fastDecoder) error {", t.Name)
	if len(t.Fields) > 64 {
		b.p("return errFallback\n}\n")
		return
	}
	b.p("if err := d.beginObject(); err != nil {\nreturn err\n}")
	if len(t.Fields) == 0 {
		b.p("for first := true; ; first = false {")
		b.p("_, ok, err := d.nextKey(first)\nif err != nil || !ok {\nreturn err\n}")
		b.p("if err := d.skip(); err != nil {\nreturn err\n}\n}\n}\n")
		return
	}
	b.p("var seen uint64")
	b.p("for first := true; ; first = false {")
	b.p("key, ok, err := d.nextKey(first)\nif err != nil {\nreturn err\n}\nif !ok {\nbreak\n}")
	b.p("var bit uint64")
	b.p("switch string(key) {")
	var names []string
	for i, f := range t.Fields {
		names = append(names, fmt.Sprintf("%q", f.JSONName))
		if f.Legacy != "" {
			// Both spellings land in the field; both present is a repeat,
			// which the general path resolves (the current one wins).
			names = append(names, fmt.Sprintf("%q", f.Legacy))
			b.p("case %q, %q:", f.JSONName, f.Legacy)
		} else {
			b.p("case %q:", f.JSONName)
		}
		if f.Default != nil {
			// null takes the default: leave that to the general path.
			b.p("if err := d.notNull(); err != nil {\nreturn err\n}")
		}
		target := "v." + f.GoName
		if expr, ok := e.field(f.GoType, target); ok {
			b.p("bit, err = 1<<%d, %s", i, expr)
			continue
		}
		b.p("bit = 1 << %d", i)
		b.p("if err = d.notNull(); err == nil {\nerr = %s.decodeFast(d)\n}", target)
	}
	b.p("default:\nerr = d.otherMember(key, %s)", strings.Join(names, ", "))
	b.p("}")
	b.p("if seen, err = memberDone(seen, bit, err); err != nil {\nreturn err\n}")
	b.p("}")
	for i, f := range t.Fields {
		if f.Default != nil {
			b.p("if seen&(1<<%d) == 0 {\n_ = json.Unmarshal([]byte(%q), &v.%s)\n}", i, string(f.Default), f.GoName)
		}
	}
	b.p("return nil\n}\n")
}

func emitUnionFast(b *w, m *model, t *goType) {
	u := t.Union
	e := &fastEmitter{b: b, m: m}
	b.p("// decodeFast decodes %s in one pass when its tag decides the variant;", t.Name)
	b.p("// other shapes go through unmarshalSlow.")
	b.p("func (u *%s) decodeFast(d *fastDecoder) error {", t.Name)
	if unionNullVariant(u) == nil {
		b.p("if d.null() {\nreturn nil // null leaves u unchanged, as in unmarshalSlow\n}")
	}
	tagged := false
	for _, v := range u.Variants {
		if v.Shape == shapeObject && v.Const != "" {
			tagged = true
		}
	}
	if tagged && u.Discriminator != "" {
		b.p("if d.peek() == '{' {")
		b.p("if tag, ok := peekTag(d.rest(), %q); ok {", u.Discriminator)
		b.p("switch string(tag) {")
		for _, v := range u.Variants {
			if v.Shape != shapeObject || v.Const == "" {
				continue
			}
			x := e.tmp()
			b.p("case %q:", v.Const)
			b.p("var %s %s", x, v.TypeName)
			b.p("if err := %s.decodeFast(d); err != nil {\nreturn err\n}", x)
			b.p("*u = %s{%s: &%s}\nreturn nil", t.Name, v.Field, x)
		}
		b.p("}")
		if u.KeepUnknown {
			b.p("raw, err := d.raw()\nif err != nil {\nreturn err\n}")
			b.p("*u = %s{unknown: &unknownVariant{tag: string(tag), raw: append([]byte(nil), raw...)}}\nreturn nil", t.Name)
		}
		if u.OtherField != "" {
			b.p("raw, err := d.raw()\nif err != nil {\nreturn err\n}")
			b.p("*u = %s{%s: &%sOther{%s: string(tag), Raw: append(json.RawMessage(nil), raw...)}}\nreturn nil", t.Name, u.OtherField, t.Name, exportName(u.Discriminator))
		}
		b.p("}\n}")
	}
	b.p("raw, err := d.raw()\nif err != nil {\nreturn err\n}")
	b.p("return u.unmarshalSlow(raw)\n}\n")
}
