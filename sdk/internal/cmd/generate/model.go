package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// kind is the shape of a generated Go type.
type kind int

const (
	kindStruct kind = iota // object with properties
	kindEnum               // named string with constants
	kindNamed              // named primitive, slice or any
	kindUnion              // struct with one pointer per variant
	kindAlias              // type alias
)

// goType is one generated Go type.
type goType struct {
	Name       string
	Doc        string
	Kind       kind
	Underlying string // kindNamed, kindAlias: the Go type expression
	Fields     []*field
	Enum       []enumValue
	Union      *union
	// Validate is emitted for request/response/notification types and unions.
	Validate bool
	// Lenient: fields marked x-deserialize-default-on-error decode a malformed
	// value as absent instead of failing the whole object (subagent types).
	Lenient bool
	// def is the schema definition the type came from (nil for synthesized).
	def *Schema
}

// field is one struct field.
type field struct {
	GoName   string
	GoType   string
	JSONName string
	Doc      string
	Required bool
	// Nullable: the schema admits null for this property.
	Nullable bool
	// Default is the schema default, applied on decode when the key is missing
	// or null, and on encode for nil slices and maps.
	Default json.RawMessage
	// Check is the Validate rule: "string" (non-empty) or "array" (non-nil).
	Check string
	// Patch marks a Nullable[T] patch field (omitted / null / value).
	Patch bool
	// Lenient: a malformed value decodes as absent.
	Lenient bool
	// SkipInvalidItems: in a lenient list, malformed items are dropped and
	// the valid ones kept.
	SkipInvalidItems bool
	// Discriminator marks the variant field that carries the union tag.
	Discriminator bool
	// Legacy is the v0.13.5 spelling of a renamed key: it decodes too (the
	// current spelling wins when both are present) and is never written.
	Legacy string
	// OmitZero: an optional struct or union written only when set.
	OmitZero bool
}

type enumValue struct {
	GoName string
	Value  string
	Doc    string
}

// variantShape says how a union variant looks on the wire.
type variantShape int

const (
	shapeObject variantShape = iota
	shapeNull
	shapeInt
	shapeString
	shapeArray
)

// union describes a union's variants and how to tell them apart.
type union struct {
	// Discriminator is the property holding the tag ("type", "sessionUpdate").
	Discriminator string
	Variants      []*variant
	// KeepUnknown: an unrecognised tag decodes to an all-nil union that keeps
	// its raw bytes and re-encodes them unchanged.
	KeepUnknown bool
	// OtherField names the variant that takes any unrecognised tag (StateUpdate).
	OtherField string
}

type variant struct {
	Field    string // Go field name on the union
	TypeName string // Go type of the variant
	Const    string // discriminator value, "" when none
	IntConst *int   // integer const (ErrorCode)
	Shape    variantShape
	// RequiredKeys are the JSON keys a payload must carry to match this variant
	// when the discriminator does not decide.
	RequiredKeys []string
	// ItemRequiredKeys: for array variants, keys every element must carry.
	ItemRequiredKeys []string
	// CtorParams are the required non-discriminator fields for the New… helper.
	CtorParams []*field
	Doc        string
	// Other marks the catch-all variant of an open union.
	Other bool
}

// model is every generated type plus the method tables.
type model struct {
	types  map[string]*goType
	order  []string
	agent  []*method
	client []*method
	// constants
	agentConsts  []methodConst
	clientConsts []methodConst
	protocolVer  int
	// compat is the source of the deprecated v0.13.5 constants and
	// constructors of stabilised types (helpers_gen.go).
	compat []string
}

type methodConst struct {
	GoName string
	Wire   string
}

func (m *model) add(t *goType) {
	if _, dup := m.types[t.Name]; dup {
		panic(fmt.Sprintf("duplicate type %s", t.Name))
	}
	m.types[t.Name] = t
	m.order = append(m.order, t.Name)
}

func (m *model) sorted() []*goType {
	names := append([]string(nil), m.order...)
	sort.Strings(names)
	out := make([]*goType, len(names))
	for i, n := range names {
		out[i] = m.types[n]
	}
	return out
}

// isSliceOrMap reports whether a Go type expression has a nil zero value that
// encoding/json omits with omitempty.
func isSliceOrMap(t string) bool {
	return strings.HasPrefix(t, "[]") || strings.HasPrefix(t, "map[")
}
