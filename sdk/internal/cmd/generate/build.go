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

// Imports from the newer schemas (sdk2.4.0/: the TypeScript SDK 2.4.0's v1
// schema.json and schema.unstable.json).
var (
	// nextDefs are the subagent-session types: stable (announced 2026-11-20)
	// although the newer schema still files them as unstable.
	nextDefs = []string{
		"SubagentCapabilities", "SubagentSessionCapabilities", "SessionCancelCapabilities",
		"SubagentUpdate", "SessionMessage", "SessionMessageChunk",
		"StateUpdate", "RunningStateUpdate", "IdleStateUpdate", "RequiresActionStateUpdate", "UnknownStateUpdate",
	}
	// nextAliases are newer-schema id definitions that are plain string aliases here.
	nextAliases = map[string]bool{"MessageId": true, "TerminalId": true, "AuthMethodId": true}
	// nextUnions gain every variant of the newer schema whose tag they lack.
	nextUnions = []string{"SessionUpdate"}
	// renamedProps are the properties the newer schema renamed on the wire,
	// by definition: current spelling -> v0.13.5 spelling. Both decode, the
	// current one is written, and the Go field keeps its v0.13.5 name.
	renamedProps = map[string]map[string]string{
		"ClientCapabilities":     {"plan": "planCapabilities"},
		"PlanFile":               {"planId": "id"},
		"PlanItems":              {"planId": "id"},
		"PlanMarkdown":           {"planId": "id"},
		"PlanRemoved":            {"planId": "id"},
		"ProviderInfo":           {"providerId": "id"},
		"SetProviderRequest":     {"providerId": "id"},
		"DisableProviderRequest": {"providerId": "id"},
		"McpServerAcp":           {"serverId": "id"},
	}
	// reshaped definitions take the newer schema's required keys and side
	// (mcp/message: serverId + requestId instead of connectionId, and a side
	// each instead of "both").
	reshaped = map[string]bool{"MessageMcpNotification": true, "MessageMcpRequest": true, "MessageMcpResponse": true}
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
	// legacyKeys are the renamed properties' v0.13.5 spellings.
	legacyKeys map[*Schema]string
	// omitZero are optional struct- or union-valued properties written
	// only when set.
	omitZero map[*Schema]bool
	// nowStable are the definitions reached from methods the newer stable
	// schema declares stable (session/delete, elicitation/*,
	// $/cancel_request) that v0.13.5 generated as Unstable… only.
	nowStable map[string]bool
	// noStabilize builds the v0.13.5 naming (before the stabilisation), to
	// find the Unstable… names that must stay as aliases.
	noStabilize bool
	m           *model
}

func build(in *inputs) (*model, error) {
	old, err := buildWith(in, true)
	if err != nil {
		return nil, err
	}
	m, err := buildWith(in, false)
	if err != nil {
		return nil, err
	}
	if err := addCompat(old, m); err != nil {
		return nil, err
	}
	return m, nil
}

func buildWith(in *inputs, noStabilize bool) (*model, error) {
	b := &builder{
		noStabilize: noStabilize,
		legacyKeys:  map[*Schema]string{},
		omitZero:    map[*Schema]bool{},
		nowStable:   map[string]bool{},
		in:          in,
		defs:        map[string]*Schema{},
		stable:      in.stable.Defs,
		prefixed:    map[string]bool{},
		plain:       map[string]bool{},
		emit:        map[string]bool{},
		defNames:    map[string]bool{},
		m:           &model{types: map[string]*goType{}},

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
	if !b.noStabilize {
		// Methods the newer stable schema declares stable: what only they
		// reach (and v0.13.5 did not have as stable) loses its prefix.
		nowStableWire := map[string]bool{}
		for _, d := range b.in.nextStable.Defs {
			if d.XMethod != "" {
				nowStableWire[d.XMethod] = true
			}
		}
		var roots []string
		for _, k := range unstableRoots {
			if nowStableWire[b.defs[k].XMethod] {
				roots = append(roots, k)
			}
		}
		for k := range closure(b.defs, roots) {
			if _, inStable := b.stable[k]; !inStable {
				b.nowStable[k] = true
			}
		}
	}
	for k := range b.emit {
		_, inStable := b.stable[k]
		changed := inStable && b.in.stable.raw[k] != b.in.unstable.raw[k] && !stableContent[k]
		if U[k] && (!inStable || changed) && !b.nowStable[k] {
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
	// Every union of nextUnions gains the newer variants, in the newer order.
	for _, union := range nextUnions {
		old := b.defs[union]
		tagProp := unionTagProperty(next[union])
		have := map[string]bool{}
		for _, v := range old.variants() {
			if c, ok := v.Properties[tagProp].constString(); ok {
				have[c] = true
			}
		}
		cp := *old
		cp.OneOf = append([]*Schema(nil), old.OneOf...)
		for _, v := range next[union].variants() {
			if c, ok := v.Properties[tagProp].constString(); ok && !have[c] {
				cp.OneOf = append(cp.OneOf, v)
				refs := map[string]bool{}
				collectRefs(v, refs)
				for _, r := range sortedKeys(refs) {
					b.importDef(r)
				}
			}
		}
		b.defs[union] = &cp
	}
	// Newer properties of every v0.13.5 definition, renamed properties and
	// reshaped definitions.
	for _, def := range sortedKeys(b.defs) {
		nd := next[def]
		if nd == nil || stableContent[def] || b.isNextDef(def) {
			continue
		}
		if err := b.overlay(def, nd); err != nil {
			return err
		}
	}
	// Methods the newer schemas add.
	for _, k := range sortedKeys(next) {
		d := next[k]
		if d.XMethod == "" || (d.XSide != "agent" && d.XSide != "client") || b.defs[k] != nil {
			continue
		}
		b.importDef(k)
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

// isNextDef reports whether def is one of the imported subagent types.
func (b *builder) isNextDef(def string) bool {
	for _, n := range nextDefs {
		if n == def {
			return true
		}
	}
	return false
}

// overlay adds to the v0.13.5 definition def the properties the newer
// definition nd has and it lacks (decoded leniently, as upstream ignores
// them), applies the wire renames, and takes a reshaped definition's side and
// required keys. Definitions the new properties refer to are imported.
func (b *builder) overlay(def string, nd *Schema) error {
	old := b.defs[def]
	renames := renamedProps[def]
	added := false
	for _, k := range sortedKeys(nd.Properties) {
		if _, ok := old.Properties[k]; !ok {
			added = true
		}
	}
	if !added && renames == nil && !reshaped[def] {
		return nil
	}
	cp := *old
	cp.Properties = map[string]*Schema{}
	for k, v := range old.Properties {
		cp.Properties[k] = v
	}
	cp.Required = append([]string(nil), old.Required...)
	for _, cur := range sortedKeys(renames) {
		legacy := renames[cur]
		p := old.Properties[legacy]
		if p == nil || nd.Properties[cur] == nil || nd.Properties[legacy] != nil {
			return fmt.Errorf("%s: rename %s -> %s does not match the schemas", def, legacy, cur)
		}
		rp := *p
		if rp.XGoName == "" {
			rp.XGoName = exportName(legacy)
		}
		delete(cp.Properties, legacy)
		cp.Properties[cur] = &rp
		b.legacyKeys[&rp] = legacy
		for i, r := range cp.Required {
			if r == legacy {
				cp.Required[i] = cur
			}
		}
	}
	_, hadMeta := old.Properties["_meta"]
	for _, k := range sortedKeys(nd.Properties) {
		if _, ok := cp.Properties[k]; ok {
			continue
		}
		if k == "_meta" && !hadMeta {
			// A map field would make a comparable v0.13.5 struct
			// incomparable (== on it stops compiling).
			continue
		}
		p := nd.Properties[k]
		cp.Properties[k] = p
		b.lenientProps[p] = true
		b.addedProps[p] = true
		refs := map[string]bool{}
		collectRefs(p, refs)
		for _, r := range sortedKeys(refs) {
			b.importDef(r)
		}
	}
	if reshaped[def] {
		cp.XSide = nd.XSide
		cp.Required = append([]string(nil), nd.Required...)
	}
	b.defs[def] = &cp
	return nil
}

// importDef generates the newer definition k (and what it refers to) when
// v0.13.5 lacks it: under its plain name when the newer stable schema holds
// it, else with the Unstable prefix.
func (b *builder) importDef(k string) {
	if b.defs[k] != nil || nextAliases[k] {
		return
	}
	d := b.in.next.Defs[k]
	if d == nil {
		panic("newer schema lacks " + k)
	}
	_, stable := b.in.nextStable.Defs[k]
	if stable {
		d = b.in.nextStable.Defs[k]
	}
	b.defs[k] = d
	b.emit[k] = true
	if stable {
		b.plain[k] = true
		b.defNames[k] = true
	} else {
		b.prefixed[k] = true
		b.defNames["Unstable"+k] = true
	}
	for _, p := range d.Properties {
		b.lenientProps[p] = true
	}
	refs := map[string]bool{}
	collectRefs(d, refs)
	for _, r := range sortedKeys(refs) {
		b.importDef(r)
	}
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
		Legacy:   b.legacyKeys[p],
		OmitZero: b.omitZero[p],
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
				b.mergeScopes(rd, props)
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

// mergeScopes adds, as optional fields, the properties of the alternatives a
// referenced definition offers (ElicitationFormMode: a session scope or a
// request scope), which v0.13.5 dropped: a form elicitation without its
// sessionId or requestId is refused by current peers. They decode like added
// properties (leniently); a union- or object-valued one is written only when
// set (omitzero), so an unset one is omitted and a null requestId survives.
func (b *builder) mergeScopes(rd *Schema, props map[string]*Schema) {
	for _, alt := range rd.variants() {
		ad := b.defs[refOf(alt)]
		if ad == nil {
			continue
		}
		for _, k := range sortedKeys(ad.Properties) {
			if _, ok := props[k]; ok {
				continue
			}
			cp := *ad.Properties[k]
			if t := b.defs[refOf(&cp)]; t != nil && (len(t.variants()) > 0 || len(t.Properties) > 0) {
				b.omitZero[&cp] = true
			}
			props[k] = &cp
			b.addedProps[&cp] = true
		}
	}
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
	Interface    string // Agent, AgentLoader, AgentExperimental, Client, ClientExperimental, or its own
	Alternatives []string
	Doc          string
	// New: v0.13.5 did not dispatch the method, so an implementation lacking
	// it leaves the message where v0.13.5 sent it (-32601 on the agent side,
	// ExtensionMethodHandler on the client side).
	New bool
	// Legacy is a v0.13.5 name kept for a method now generated under another
	// one (Current): its interface method is still recognised and its
	// outbound wrapper is a deprecated forwarder.
	Legacy  bool
	Current string
}

var (
	// methodNames fixes Go names the request type does not imply.
	methodNames = map[string]string{"session/update": "SessionUpdate"}
	// notDispatched: methods with constants only (no interface, no wrapper).
	notDispatched = map[string]bool{}
	// newlyDispatched: methods v0.13.5 had constants for but did not dispatch.
	newlyDispatched = map[string]bool{"mcp/message": true}
)

// addCompat keeps the v0.13.5 names of what the newer schema made stable:
// every Unstable… type of old (the model built without the stabilisation)
// that m lacks becomes a deprecated alias of its stable type, and every
// v0.13.5 method m renamed keeps its interface method (still dispatched) and
// a deprecated outbound wrapper. Methods v0.13.5 did not have, or had under
// another name, get a small interface of their own, so the v0.13.5
// interfaces keep their method sets.
func addCompat(old, m *model) error {
	for _, name := range old.order {
		if !strings.HasPrefix(name, "Unstable") || m.types[name] != nil {
			continue
		}
		cur := strings.TrimPrefix(name, "Unstable")
		if m.types[cur] == nil {
			return fmt.Errorf("%s has no stable counterpart", name)
		}
		m.add(&goType{Name: name, Kind: kindAlias, Underlying: cur,
			Doc: docComment(fmt.Sprintf("%s is the v0.13.5 name of %s.\n\nDeprecated: use %s; the newer protocol made it stable.", name, cur, cur))})
		ot := old.types[name]
		var b w
		for _, v := range ot.Enum {
			curConst := cur + strings.TrimPrefix(v.GoName, name)
			b.WriteString(docComment(fmt.Sprintf("%s is the v0.13.5 name of %s.\n\nDeprecated: use %s.", v.GoName, curConst, curConst)))
			b.p("const %s = %s\n", v.GoName, curConst)
		}
		if ot.Union != nil {
			for _, v := range ot.Union.Variants {
				if v.CtorParams == nil {
					continue
				}
				var params, args []string
				for _, f := range v.CtorParams {
					pn := lowerFirst(f.JSONName)
					params = append(params, pn+" "+f.GoType)
					args = append(args, pn)
				}
				fn, curFn := "New"+name+v.Field, "New"+cur+v.Field
				b.WriteString(docComment(fmt.Sprintf("%s is the v0.13.5 name of %s.\n\nDeprecated: use %s.", fn, curFn, curFn)))
				b.p("func %s(%s) %s {\nreturn %s(%s)\n}\n", fn, strings.Join(params, ", "), name, curFn, strings.Join(args, ", "))
			}
		}
		m.compat = append(m.compat, b.String())
	}
	for _, side := range []*[]*method{&m.agent, &m.client} {
		oldSide := old.agent
		ifacePrefix := "Agent"
		if side == &m.client {
			oldSide, ifacePrefix = old.client, "Client"
		}
		byName := map[string]*method{}
		for _, mt := range *side {
			byName[mt.GoName] = mt
		}
		var legacy []*method
		for _, om := range oldSide {
			if om.New || byName[om.GoName] != nil {
				continue
			}
			var cur *method
			for _, mt := range *side {
				if mt.Wire == om.Wire {
					cur = mt
				}
			}
			if cur == nil {
				return fmt.Errorf("method %s (%s) vanished", om.GoName, om.Wire)
			}
			cur.Alternatives = append(cur.Alternatives, om.GoName)
			cur.Interface = ifacePrefix + cur.GoName + "Handler"
			lm := *om
			lm.Legacy, lm.Current = true, cur.GoName
			legacy = append(legacy, &lm)
		}
		for _, mt := range *side {
			if mt.New {
				mt.Interface = ifacePrefix + mt.GoName + "Handler"
			}
		}
		*side = append(*side, legacy...)
	}
	return nil
}

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
		methods := map[string]string{}
		for k, v := range b.in.metaUnstable.AgentMethods {
			if side == "agent" {
				methods[k] = v
			}
		}
		for k, v := range b.in.metaUnstable.ClientMethods {
			if side == "client" {
				methods[k] = v
			}
		}
		prefix := "AgentMethod"
		if side == "client" {
			prefix = "ClientMethod"
		}
		v0135 := map[string]bool{}
		for _, w := range methods {
			v0135[w] = true
		}
		// Methods only the newer schema has (imported by importAdditions).
		for _, def := range sortedKeys(b.defs) {
			d := b.defs[def]
			if d.XMethod == "" || d.XSide != side {
				continue
			}
			known := false
			for _, w := range methods {
				known = known || w == d.XMethod
			}
			if !known {
				methods[strings.NewReplacer("/", "_").Replace(d.XMethod)] = d.XMethod
			}
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
			mt := &method{Wire: wire, GoName: name, Params: params, Result: result, Doc: doc}
			mt.New = !v0135[wire] || newlyDispatched[wire]
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
