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

// scalarOf returns the decoder method for a Go type that is (or is named
// after) a JSON scalar, and whether a conversion is needed.
func (e *fastEmitter) scalarOf(goType string) (method string, conv bool) {
	switch goType {
	case "string":
		return "str", false
	case "int":
		return "integer", false
	case "float64":
		return "float", false
	case "bool":
		return "boolean", false
	}
	if stringAliases[goType] {
		return "str", false
	}
	if t := e.m.types[goType]; t != nil {
		switch {
		case t.Kind == kindEnum:
			return "str", true
		case t.Kind == kindNamed && t.Underlying == "string":
			return "str", true
		case t.Kind == kindNamed && t.Underlying == "int":
			return "integer", true
		}
	}
	return "", false
}

// hasFast reports whether goType is a generated struct or union with decodeFast.
func (e *fastEmitter) hasFast(goType string) bool {
	t := e.m.types[goType]
	return t != nil && (t.Kind == kindStruct || t.Kind == kindUnion)
}

// decode emits code that decodes the next value into target (an
// addressable expression of type goType). Null follows encoding/json: it
// leaves scalars unchanged and makes pointers, slices, maps and any nil.
func (e *fastEmitter) decode(goType, target string) {
	b := e.b
	if m, conv := e.scalarOf(goType); m != "" {
		x := e.tmp()
		b.p("if !d.null() {")
		b.p("%s, err := d.%s()\nif err != nil {\nreturn err\n}", x, m)
		if conv {
			b.p("%s = %s(%s)", target, goType, x)
		} else {
			b.p("%s = %s", target, x)
		}
		b.p("}")
		return
	}
	switch {
	case goType == "any":
		x := e.tmp()
		b.p("%s, err := d.anyValue()\nif err != nil {\nreturn err\n}\n%s = %s", x, target, x)
	case goType == "map[string]any":
		x := e.tmp()
		b.p("%s, err := d.mapAny()\nif err != nil {\nreturn err\n}\n%s = %s", x, target, x)
	case strings.HasPrefix(goType, "*"):
		elem := goType[1:]
		x := e.tmp()
		b.p("if d.null() {\n%s = nil\n} else {", target)
		b.p("var %s %s", x, elem)
		e.decodeValue(elem, x)
		b.p("%s = &%s\n}", target, x)
	case strings.HasPrefix(goType, "[]"):
		elem := goType[2:]
		s, x := e.tmp(), e.tmp()
		b.p("if d.null() {\n%s = nil\n} else {", target)
		b.p("if err := d.beginArray(); err != nil {\nreturn err\n}")
		b.p("%s := %s{}", s, goType)
		b.p("for first := true; ; first = false {")
		b.p("more, err := d.nextItem(first)\nif err != nil {\nreturn err\n}\nif !more {\nbreak\n}")
		b.p("var %s %s", x, elem)
		e.decodeValue(elem, x)
		b.p("%s = append(%s, %s)\n}", s, s, x)
		b.p("%s = %s\n}", target, s)
	case e.hasFast(goType):
		// A union without a null variant decodes null itself, as a no-op.
		if t := e.m.types[goType]; t.Kind != kindUnion || unionNullVariant(t.Union) != nil {
			b.p("if d.peek() == 'n' {\nreturn errFallback\n}")
		}
		b.p("if err := %s.decodeFast(d); err != nil {\nreturn err\n}", target)
	default:
		e.decodeRaw(target)
	}
}

// decodeValue decodes a non-null element (of a slice or behind a pointer).
func (e *fastEmitter) decodeValue(goType, target string) {
	if m, conv := e.scalarOf(goType); m != "" {
		x := e.tmp()
		e.b.p("if d.peek() == 'n' {\nreturn errFallback\n}")
		e.b.p("%s, err := d.%s()\nif err != nil {\nreturn err\n}", x, m)
		if conv {
			e.b.p("%s = %s(%s)", target, goType, x)
		} else {
			e.b.p("%s = %s", target, x)
		}
		return
	}
	e.decode(goType, target)
}

// decodeRaw hands one value to encoding/json (Nullable, maps of other types).
func (e *fastEmitter) decodeRaw(target string) {
	x := e.tmp()
	e.b.p("%s, err := d.raw()\nif err != nil {\nreturn err\n}", x)
	e.b.p("if decodeExact(%s, &%s) != nil {\nreturn errFallback\n}", x, target)
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
	if len(t.Fields) > 0 {
		b.p("var seen uint64")
	}
	b.p("for first := true; ; first = false {")
	if len(t.Fields) > 0 {
		b.p("key, ok, err := d.nextKey(first)")
	} else {
		b.p("_, ok, err := d.nextKey(first)")
	}
	b.p("if err != nil {\nreturn err\n}\nif !ok {\nbreak\n}")
	var names []string
	if len(t.Fields) > 0 {
		b.p("switch string(key) {")
		for i, f := range t.Fields {
			names = append(names, fmt.Sprintf("%q", f.JSONName))
			b.p("case %q:", f.JSONName)
			b.p("if seen&(1<<%d) != 0 {\nreturn errFallback\n}\nseen |= 1 << %d", i, i)
			if f.Default != nil {
				// null takes the default: leave that to the general path.
				b.p("if d.peek() == 'n' {\nreturn errFallback\n}")
			}
			e.decode(f.GoType, "v."+f.GoName)
			b.p("continue")
		}
		b.p("}")
		b.p("if foldsTo(key, %s) {\nreturn errFallback\n}", strings.Join(names, ", "))
	}
	b.p("if err := d.skip(); err != nil {\nreturn err\n}")
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
