package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Compatibility rules that the schema alone does not imply. Each entry keeps
// an identifier of the v0.13.5 API exactly as consumers already use it.
var (
	// stableContent: definitions generated from the stable schema even though
	// the unstable one changed them (v0.13.5 kept ErrorCode's stable variants).
	stableContent = map[string]bool{"ErrorCode": true}
	// noConstructors: discriminated unions whose variants are built with the
	// hand-written helpers (helpers.go) instead of generated New… functions.
	noConstructors = map[string]bool{"ContentBlock": true, "SessionUpdate": true, "ToolCallContent": true}
	// envelopeRoots are the JSON-RPC envelope definitions; with every method's
	// params and result they are the roots of the generated type graph.
	// extraValidate: definitions with a Validate method beyond the method
	// payloads (v0.13.5 validates ToolCallUpdate).
	extraValidate = map[string]bool{"ToolCallUpdate": true}
	envelopeRoots = []string{"AgentRequest", "AgentResponse", "AgentNotification", "ClientRequest", "ClientResponse", "ClientNotification"}
)

// Additive imports from the newer schema (sdk2.4.0/schema.unstable.json).
var (
	// nextDefs are generated as new types under their own names.
	nextDefs = []string{
		"SubagentCapabilities", "SubagentSessionCapabilities", "SessionCancelCapabilities",
		"SubagentUpdate", "SessionMessage", "SessionMessageChunk",
		"StateUpdate", "RunningStateUpdate", "IdleStateUpdate", "RequiresActionStateUpdate", "UnknownStateUpdate",
	}
	// nextAliases are newer-schema id definitions that are plain string aliases here.
	nextAliases = map[string]bool{"MessageId": true, "TerminalId": true, "AuthMethodId": true}
	// nextVariants appends newer-schema variants to existing unions.
	nextVariants = map[string][]string{
		"SessionUpdate": {"subagent_update", "session_message", "session_message_chunk"},
	}
	// nextProperties adds newer-schema properties to existing definitions.
	nextProperties = map[string][]string{
		"ClientCapabilities": {"subagents"},
		"ToolCall":           {"name"},
		"ToolCallUpdate":     {"name"},
	}
)

type builder struct {
	in       *inputs
	defs     map[string]*Schema // definitions by schema name (0.13.5 unstable + imports)
	stable   map[string]*Schema
	prefixed map[string]bool // has an Unstable-prefixed version
	plain    map[string]bool // has an unprefixed version
	emit     map[string]bool // definitions that become Go types
	defNames map[string]bool // every Go name taken by a definition
	// lenientProps are the imported properties whose
	// x-deserialize-default-on-error mark is honoured (base 0.13.5 properties
	// decode strictly, as upstream).
	lenientProps map[*Schema]bool
	// addedProps are the properties added to v0.13.5 definitions. Upstream
	// ignores them, so a malformed value decodes as absent instead of failing
	// a message upstream accepts.
	addedProps map[*Schema]bool
	m          *model
}

func build(in *inputs) (*model, error) {
	b := &builder{
		in:       in,
		defs:     map[string]*Schema{},
		stable:   in.stable.Defs,
		prefixed: map[string]bool{},
		plain:    map[string]bool{},
		emit:     map[string]bool{},
		defNames: map[string]bool{},
		m:        &model{types: map[string]*goType{}},

		lenientProps: map[*Schema]bool{},
		addedProps:   map[*Schema]bool{},
	}
	for k, v := range in.unstable.Defs {
		b.defs[k] = v
	}
	for k := range stableContent {
		b.defs[k] = in.stable.Defs[k]
	}
	b.classify()
	if err := b.importAdditions(); err != nil {
		return nil, err
	}
	for _, name := range sortedKeys(b.emit) {
		if b.plain[name] {
			if err := b.buildDef(name, false); err != nil {
				return nil, err
			}
		}
		if b.prefixed[name] {
			if err := b.buildDef(name, true); err != nil {
				return nil, err
			}
		}
	}
	b.buildMethods()
	return b.m, nil
}

// classify decides which definitions are generated and under which names.
// Definitions reached from unstable-only methods that are new or changed in
// the unstable schema get the "Unstable" prefix; a definition also reached
// from stable methods (or present in the stable schema) keeps a plain version.
func (b *builder) classify() {
	var stableRoots, unstableRoots, allRoots []string
	for _, k := range sortedKeys(b.defs) {
		d := b.defs[k]
		if d.XMethod == "" {
			continue
		}
		allRoots = append(allRoots, k)
		if _, ok := b.stable[k]; ok {
			stableRoots = append(stableRoots, k)
		} else {
			unstableRoots = append(unstableRoots, k)
		}
	}
	S := closure(b.defs, stableRoots)
	U := closure(b.defs, unstableRoots)
	b.emit = closure(b.defs, append(allRoots, envelopeRoots...))
	for k := range b.emit {
		_, inStable := b.stable[k]
		changed := inStable && b.in.stable.raw[k] != b.in.unstable.raw[k] && !stableContent[k]
		if U[k] && (!inStable || changed) {
			b.prefixed[k] = true
		}
		if !b.prefixed[k] || S[k] || inStable {
			b.plain[k] = true
		}
	}
	for k := range b.emit {
		if b.plain[k] {
			b.defNames[k] = true
		}
		if b.prefixed[k] {
			b.defNames["Unstable"+k] = true
		}
	}
}

// importAdditions adds the newer schema's subagent types, the draft
// supplement and the legacy shapes consumers rely on.
func (b *builder) importAdditions() error {
	next := b.in.next.Defs
	for _, k := range nextDefs {
		d, ok := next[k]
		if !ok {
			return fmt.Errorf("newer schema lacks %s", k)
		}
		b.defs[k] = d
		b.emit[k] = true
		b.plain[k] = true
		b.defNames[k] = true
		for _, p := range d.Properties {
			b.lenientProps[p] = true
		}
	}
	for union, tags := range nextVariants {
		old := b.defs[union]
		cp := *old
		cp.OneOf = append([]*Schema(nil), old.OneOf...)
		for _, tag := range tags {
			found := false
			for _, v := range next[union].variants() {
				if c, _ := v.Properties[unionTagProperty(next[union])].constString(); c == tag {
					cp.OneOf = append(cp.OneOf, v)
					found = true
				}
			}
			if !found {
				return fmt.Errorf("newer schema lacks %s variant %s", union, tag)
			}
		}
		b.defs[union] = &cp
	}
	for def, props := range nextProperties {
		old := b.defs[def]
		cp := *old
		cp.Properties = map[string]*Schema{}
		for k, v := range old.Properties {
			cp.Properties[k] = v
		}
		for _, p := range props {
			cp.Properties[p] = next[def].Properties[p]
			b.lenientProps[next[def].Properties[p]] = true
			b.addedProps[next[def].Properties[p]] = true
		}
		b.defs[def] = &cp
	}
	// The supplement: extra variants ("+variants:U"), extra properties and
	// whole definitions.
	sup := b.in.supplement.Defs
	for _, k := range sortedKeys(sup) {
		d := sup[k]
		switch {
		case strings.HasPrefix(k, "+variants:"):
			union := strings.TrimPrefix(k, "+variants:")
			old := b.defs[union]
			cp := *old
			cp.OneOf = append(append([]*Schema(nil), old.OneOf...), d.OneOf...)
			b.defs[union] = &cp
		case strings.HasPrefix(k, "+properties:"):
			for _, def := range strings.Split(strings.TrimPrefix(k, "+properties:"), ",") {
				old := b.defs[def]
				cp := *old
				cp.Properties = map[string]*Schema{}
				for pk, pv := range old.Properties {
					cp.Properties[pk] = pv
				}
				for pk, pv := range d.Properties {
					cp.Properties[pk] = pv
					b.lenientProps[pv] = true
					b.addedProps[pv] = true
				}
				b.defs[def] = &cp
			}
		default:
			b.defs[k] = d
			b.emit[k] = true
			if d.XGoName != "" && strings.HasPrefix(d.XGoName, "Unstable") {
				b.prefixed[k] = true
				b.defNames["Unstable"+k] = true
			} else {
				b.plain[k] = true
				b.defNames[k] = true
			}
		}
	}
	return nil
}

// goName is a definition's Go name in a plain or Unstable context.
func (b *builder) goName(def string, unstable bool) string {
	if unstable && b.prefixed[def] {
		return "Unstable" + def
	}
	if b.plain[def] {
		return def
	}
	if b.prefixed[def] {
		return "Unstable" + def
	}
	if nextAliases[def] {
		return def
	}
	panic("no Go name for definition " + def)
}

// unionTagProperty finds the discriminator property of a union definition:
// the declared one, else the property every tagged variant fixes with const.
func unionTagProperty(s *Schema) string {
	if s.Discriminator != nil {
		return s.Discriminator.PropertyName
	}
	for _, v := range s.variants() {
		for _, k := range sortedKeys(v.Properties) {
			if _, ok := v.Properties[k].constString(); ok {
				return k
			}
		}
	}
	return ""
}

// refOf returns the single definition a schema stands for ($ref or allOf[$ref]).
func refOf(s *Schema) string {
	if s.Ref != "" {
		return refName(s.Ref)
	}
	if len(s.AllOf) == 1 && s.AllOf[0].Ref != "" {
		return refName(s.AllOf[0].Ref)
	}
	return ""
}

// typeOf maps a property schema to a Go type expression.
func (b *builder) typeOf(s *Schema, unstable bool) (goType string, nullable bool) {
	if r := refOf(s); r != "" {
		return b.goName(r, unstable), s.Type.has("null")
	}
	if vs := s.AnyOf; len(vs) == 2 && (vs[0].isNull() || vs[1].isNull()) {
		other := vs[0]
		if other.isNull() {
			other = vs[1]
		}
		t, _ := b.typeOf(other, unstable)
		return t, true
	}
	if len(s.AnyOf) > 0 || len(s.OneOf) > 0 {
		return "any", false
	}
	nullable = s.Type.has("null")
	switch s.Type.primary() {
	case "string":
		return "string", nullable
	case "integer":
		return "int", nullable
	case "number":
		return "float64", nullable
	case "boolean":
		return "bool", nullable
	case "array":
		it := "any"
		if s.Items != nil {
			it, _ = b.typeOf(s.Items, unstable)
		}
		return "[]" + it, nullable
	case "object":
		return "map[string]any", nullable
	}
	return "any", false
}

// buildField turns one property into a struct field.
func (b *builder) buildField(name string, p *Schema, required, unstable bool) *field {
	t, nullable := b.typeOf(p, unstable)
	f := &field{
		GoName:   exportName(name),
		JSONName: name,
		Doc:      p.Description,
		Required: required,
		Nullable: nullable,
		Default:  p.Default,
		Lenient:  (p.XDefaultOnError && b.lenientProps[p]) || b.addedProps[p],
	}
	f.SkipInvalidItems = f.Lenient && p.XSkipInvalidItems
	if p.XGoName != "" {
		f.GoName = p.XGoName
	}
	switch {
	case required:
		f.GoType = t
	case isSliceOrMap(t) || t == "any":
		f.GoType = t
	case nullable:
		f.GoType = "*" + t
	default:
		f.GoType = t
	}
	if required && t == "string" {
		f.Check = "string"
	}
	if required && strings.HasPrefix(t, "[]") {
		f.Check = "array"
	}
	return f
}

// fieldsOf builds the fields of an object schema, sorted by JSON name.
func (b *builder) fieldsOf(props map[string]*Schema, required []string, unstable bool) []*field {
	req := map[string]bool{}
	for _, r := range required {
		req[r] = true
	}
	var out []*field
	for _, k := range sortedKeys(props) {
		out = append(out, b.buildField(k, props[k], req[k], unstable))
	}
	return out
}

// hasValidate says which definitions get a Validate method: every method
// payload and the envelope types.
func hasValidate(def string, s *Schema) bool {
	if s.XMethod != "" || extraValidate[def] {
		return true
	}
	return strings.HasSuffix(def, "Request") || strings.HasSuffix(def, "Response") || strings.HasSuffix(def, "Notification")
}

func (b *builder) buildDef(def string, unstable bool) error {
	s := b.defs[def]
	name := b.goName(def, unstable)
	if !unstable && !b.plain[def] {
		return nil
	}
	t := &goType{Name: name, def: s}
	isNext := false
	for _, n := range nextDefs {
		if n == def {
			isNext = true
		}
	}
	switch {
	case isEnum(s):
		t.Kind = kindEnum
		t.Doc = typeDoc(name, "is an enumeration of string values.", s.Description)
		for _, v := range enumValues(s) {
			t.Enum = append(t.Enum, enumValue{GoName: name + exportName(v.Value), Value: v.Value, Doc: v.Doc})
		}
	case len(s.variants()) > 0 && !(isNext && len(s.Properties) > 0):
		// (An imported definition with properties is a plain object: its
		// variants only refine the properties, e.g. IdleStateUpdate's stopReason.)
		return b.buildUnion(def, name, s, unstable)
	case s.Type.primary() == "object" || len(s.Properties) > 0:
		t.Kind = kindStruct
		t.Doc = typeDoc(name, "is an ACP object.", s.Description)
		t.Fields = b.fieldsOf(s.Properties, s.Required, unstable)
		t.Validate = hasValidate(def, s)
		t.Lenient = anyLenient(t.Fields)
		if isNext {
			b.markPatch(def, t)
		}
	case s.Type.primary() == "string":
		t.Kind = kindNamed
		t.Underlying = "string"
		t.Doc = typeDoc(name, "is a string identifier.", s.Description)
	case s.Type.primary() == "integer":
		t.Kind = kindNamed
		t.Underlying = "int"
		t.Doc = typeDoc(name, "is an integer.", s.Description)
	case s.Type.primary() == "array":
		it, _ := b.typeOf(s.Items, unstable)
		t.Kind = kindNamed
		t.Underlying = "[]" + it
		t.Doc = typeDoc(name, "is a list.", s.Description)
	default:
		t.Kind = kindNamed
		t.Underlying = "any"
		t.Doc = typeDoc(name, "holds any JSON value.", s.Description)
	}
	b.m.add(t)
	return nil
}

// markPatch applies the patch semantics of the newer schema's subagent types:
// properties documented as "Omitted means unchanged / null clears" become
// Nullable[T] with omitzero, and x-deserialize-default-on-error fields decode
// leniently.
func (b *builder) markPatch(def string, t *goType) {
	for _, f := range t.Fields {
		if f.Lenient {
			t.Lenient = true
		}
		p := b.defs[def].Properties[f.JSONName]
		doc := p.Description
		patch := p.XPatch || (!f.Required && f.Nullable && (strings.Contains(doc, "Omitted means unchanged") || strings.Contains(doc, "Omitted leaves") || strings.Contains(doc, "Omitted leaves the stored value unchanged")))
		if def == "SubagentUpdate" && !f.Required {
			patch = true
		}
		if patch {
			base, _ := b.typeOf(p, false)
			f.Patch = true
			f.GoType = "Nullable[" + base + "]"
		}
	}
}

type enumEntry struct {
	Value string
	Doc   string
}

// isEnum: a string enum, or a oneOf/anyOf of string consts (optionally with a
// plain string catch-all, i.e. an open enum).
func isEnum(s *Schema) bool {
	if len(s.Enum) > 0 {
		return true
	}
	vs := s.variants()
	if len(vs) == 0 || len(s.Properties) > 0 {
		return false
	}
	consts := 0
	for _, v := range vs {
		if _, ok := v.constString(); ok {
			consts++
			continue
		}
		if v.Type.primary() == "string" && v.Ref == "" && len(v.Properties) == 0 && len(v.AllOf) == 0 {
			continue
		}
		return false
	}
	return consts > 0
}

func enumValues(s *Schema) []enumEntry {
	var out []enumEntry
	for _, raw := range s.Enum {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			out = append(out, enumEntry{Value: v})
		}
	}
	for _, v := range s.variants() {
		if c, ok := v.constString(); ok {
			out = append(out, enumEntry{Value: c, Doc: v.Description})
		}
	}
	return out
}

// variantTypeName names the struct generated for a tagged variant.
func (b *builder) variantTypeName(def, unionName, tag string) string {
	if def == "SessionUpdate" {
		if strings.HasSuffix(tag, "_update") {
			return "Session" + exportName(tag)
		}
		return "SessionUpdate" + exportName(tag)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(unionName, "Request"), "Response")
	n := base + exportName(tag)
	if b.defNames[n] {
		n += "Inline"
	}
	return n
}

func (b *builder) buildUnion(def, name string, s *Schema, unstable bool) error {
	u := &union{Discriminator: unionTagProperty(s)}
	t := &goType{Name: name, Kind: kindUnion, Union: u, def: s, Validate: true}
	t.Doc = typeDoc(name, "is a union: exactly one of its fields is set.", s.Description)
	if def == "SessionUpdate" {
		u.KeepUnknown = true
	}
	for _, v := range s.variants() {
		vr := &variant{Doc: v.Description}
		switch {
		case v.isNull():
			vr.Shape = shapeNull
			vr.Field = exportName(v.Title)
			vr.TypeName = name + vr.Field
			b.m.add(&goType{Name: vr.TypeName, Kind: kindStruct, Doc: typeDoc(vr.TypeName, "is the null variant of "+name+".", v.Description)})
		case v.Type.primary() == "integer" || v.Type.primary() == "string":
			if v.Type.primary() == "integer" {
				vr.Shape = shapeInt
			} else {
				vr.Shape = shapeString
			}
			vr.Field = exportName(v.Title)
			vr.TypeName = name + vr.Field
			if len(v.Const) > 0 {
				var c int
				if json.Unmarshal(v.Const, &c) == nil {
					vr.IntConst = &c
				}
			}
			under := "int"
			if vr.Shape == shapeString {
				under = "string"
			}
			b.m.add(&goType{Name: vr.TypeName, Kind: kindNamed, Underlying: under, Doc: typeDoc(vr.TypeName, "is a variant of "+name+".", v.Description)})
		case v.Type.primary() == "array":
			vr.Shape = shapeArray
			vr.Field = exportName(v.Title)
			vr.TypeName = name + vr.Field
			it, _ := b.typeOf(v.Items, unstable)
			if r := refOf(v.Items); r != "" {
				vr.ItemRequiredKeys = b.defs[r].Required
			}
			b.m.add(&goType{Name: vr.TypeName, Kind: kindNamed, Underlying: "[]" + it, Doc: typeDoc(vr.TypeName, "is a variant of "+name+".", v.Description)})
		default:
			vr.Shape = shapeObject
			tagProp := v.Properties[u.Discriminator]
			c, hasConst := tagProp.constString()
			ref := refOf(v)
			if !hasConst && v.Title == "other" && u.Discriminator != "" {
				// Open union: any other tag, payload kept verbatim.
				vr.Other = true
				vr.Field = "Other"
				vr.TypeName = name + "Other"
				u.OtherField = vr.Field
				break
			}
			if !hasConst && ref != "" && len(v.Properties) == 0 {
				vr.Field = exportName(v.Title)
				vr.TypeName = b.goName(ref, unstable)
				vr.RequiredKeys = b.defs[ref].Required
				break
			}
			tag := c
			if !hasConst {
				tag = v.Title
			}
			vr.Const = c
			vr.Field = exportName(tag)
			vr.TypeName = b.variantTypeName(def, name, tag)
			props := map[string]*Schema{}
			var required []string
			for k, p := range s.Properties {
				props[k] = p
			}
			required = append(required, s.Required...)
			var ctorFrom []string
			if ref != "" {
				rd := b.defs[ref]
				if rd == nil {
					return fmt.Errorf("%s: variant refers to unknown %s", def, ref)
				}
				for k, p := range rd.Properties {
					props[k] = p
				}
				required = append(required, rd.Required...)
				ctorFrom = append(ctorFrom, rd.Required...)
			}
			for k, p := range v.Properties {
				props[k] = p
			}
			required = append(required, v.Required...)
			for _, r := range v.Required {
				if r != u.Discriminator {
					ctorFrom = append(ctorFrom, r)
				}
			}
			vt := &goType{Name: vr.TypeName, Kind: kindStruct, def: v}
			vt.Doc = typeDoc(vr.TypeName, "is the "+fmt.Sprintf("%q", tag)+" variant of "+name+".", variantDoc(v, b.defs[ref]))
			vt.Fields = b.fieldsOf(props, required, unstable)
			vt.Lenient = anyLenient(vt.Fields)
			for _, f := range vt.Fields {
				if f.JSONName == u.Discriminator && hasConst {
					f.Discriminator = true
				}
			}
			if def == "SessionUpdate" && ref != "" {
				for _, n := range nextDefs {
					if n == ref {
						b.markPatchVariant(ref, vt)
					}
				}
			}
			b.m.add(vt)
			vr.RequiredKeys = dedupe(required)
			if hasConst && s.Discriminator != nil && !noConstructors[def] {
				for _, r := range ctorFrom {
					for _, f := range vt.Fields {
						if f.JSONName == r {
							vr.CtorParams = append(vr.CtorParams, f)
						}
					}
				}
				if vr.CtorParams == nil {
					vr.CtorParams = []*field{}
				}
			}
		}
		u.Variants = append(u.Variants, vr)
	}
	b.m.add(t)
	return nil
}

// markPatchVariant applies markPatch's rules to a session-update variant built
// from one of the imported subagent definitions.
func (b *builder) markPatchVariant(def string, vt *goType) {
	saved := b.defs[def]
	merged := *saved
	merged.Properties = map[string]*Schema{}
	for k, v := range saved.Properties {
		merged.Properties[k] = v
	}
	for _, f := range vt.Fields {
		if _, ok := merged.Properties[f.JSONName]; !ok {
			merged.Properties[f.JSONName] = &Schema{Type: typeList{"string"}}
		}
	}
	b.defs[def] = &merged
	b.markPatch(def, vt)
	b.defs[def] = saved
}

func variantDoc(v, ref *Schema) string {
	if v.Description != "" {
		return v.Description
	}
	if ref != nil {
		return ref.Description
	}
	return ""
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// method is one ACP method a side handles.
type method struct {
	Wire         string
	GoName       string // Go method name on the interface and the outbound wrapper
	Params       string // Go params type
	Result       string // Go result type ("" for notifications)
	Interface    string // Agent, AgentLoader, AgentExperimental, Client, ClientExperimental
	Alternatives []string
	Doc          string
}

var (
	// methodNames fixes Go names the request type does not imply.
	methodNames = map[string]string{"session/update": "SessionUpdate"}
	// notDispatched: methods with constants only (no interface, no wrapper).
	notDispatched = map[string]bool{"mcp/message": true}
	// alternativeNames: inbound dispatch also accepts an implementation of this
	// method name with the same signature (consumers implement DeleteSession).
	alternativeNames = map[string][]string{"session/delete": {"DeleteSession"}}
)

func (b *builder) buildMethods() {
	b.m.protocolVer = b.in.meta.Version
	stableAgent := map[string]bool{}
	for _, w := range b.in.meta.AgentMethods {
		stableAgent[w] = true
	}
	stableClient := map[string]bool{}
	for _, w := range b.in.meta.ClientMethods {
		stableClient[w] = true
	}
	for _, side := range []string{"agent", "client"} {
		methods := b.in.metaUnstable.AgentMethods
		prefix := "AgentMethod"
		if side == "client" {
			methods = b.in.metaUnstable.ClientMethods
			prefix = "ClientMethod"
		}
		for _, key := range sortedKeys(methods) {
			wire := methods[key]
			c := methodConst{GoName: prefix + exportName(wire), Wire: wire}
			if side == "agent" {
				b.m.agentConsts = append(b.m.agentConsts, c)
			} else {
				b.m.clientConsts = append(b.m.clientConsts, c)
			}
			if notDispatched[wire] {
				continue
			}
			var params, result string
			var doc string
			for _, def := range sortedKeys(b.defs) {
				d := b.defs[def]
				if d.XMethod != wire || d.XSide != side {
					continue
				}
				unstable := b.prefixed[def] && !b.plain[def]
				n := b.goName(def, unstable)
				if strings.HasSuffix(def, "Response") {
					result = n
				} else {
					params = n
					doc = d.Description
				}
			}
			if params == "" {
				panic("no params type for " + wire)
			}
			name := methodNames[wire]
			if name == "" {
				name = strings.TrimSuffix(strings.TrimSuffix(params, "Request"), "Notification")
			}
			mt := &method{Wire: wire, GoName: name, Params: params, Result: result, Doc: doc, Alternatives: alternativeNames[wire]}
			unstable := strings.HasPrefix(params, "Unstable")
			switch {
			case side == "agent" && wire == "session/load":
				mt.Interface = "AgentLoader"
			case side == "agent" && unstable:
				mt.Interface = "AgentExperimental"
			case side == "agent":
				mt.Interface = "Agent"
			case unstable:
				mt.Interface = "ClientExperimental"
			default:
				mt.Interface = "Client"
			}
			if side == "agent" {
				b.m.agent = append(b.m.agent, mt)
			} else {
				b.m.client = append(b.m.client, mt)
			}
		}
	}
	sort.Slice(b.m.agentConsts, func(i, j int) bool { return b.m.agentConsts[i].GoName < b.m.agentConsts[j].GoName })
	sort.Slice(b.m.clientConsts, func(i, j int) bool { return b.m.clientConsts[i].GoName < b.m.clientConsts[j].GoName })
}

func anyLenient(fields []*field) bool {
	for _, f := range fields {
		if f.Lenient {
			return true
		}
	}
	return false
}
