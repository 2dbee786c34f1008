package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Schema is the subset of JSON Schema (draft 2020-12) the ACP schemas use.
type Schema struct {
	Ref           string             `json:"$ref"`
	Type          typeList           `json:"type"`
	Title         string             `json:"title"`
	Description   string             `json:"description"`
	Properties    map[string]*Schema `json:"properties"`
	Required      []string           `json:"required"`
	AllOf         []*Schema          `json:"allOf"`
	AnyOf         []*Schema          `json:"anyOf"`
	OneOf         []*Schema          `json:"oneOf"`
	Items         *Schema            `json:"items"`
	Const         json.RawMessage    `json:"const"`
	Enum          []json.RawMessage  `json:"enum"`
	Default       json.RawMessage    `json:"default"`
	Format        string             `json:"format"`
	Discriminator *struct {
		PropertyName string `json:"propertyName"`
	} `json:"discriminator"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Not                  *Schema         `json:"not"`
	XMethod              string          `json:"x-method"`
	XSide                string          `json:"x-side"`
	XDefaultOnError      bool            `json:"x-deserialize-default-on-error"`
	XSkipInvalidItems    bool            `json:"x-deserialize-skip-invalid-items"`
	// XGoName overrides the Go name derived from a property or definition name
	// (supplement.json only).
	XGoName string `json:"x-go-name"`
	// XPatch marks a property as a patch field: omitted, null and a value are
	// three different things (supplement and imported subagent types).
	XPatch bool `json:"x-patch"`
}

// typeList holds "type", which is either a string or an array of strings.
type typeList []string

func (t *typeList) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		*t = l
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*t = typeList{s}
	return nil
}

// has reports whether the type list names kind.
func (t typeList) has(kind string) bool {
	for _, k := range t {
		if k == kind {
			return true
		}
	}
	return false
}

// primary is the first non-null type, or "".
func (t typeList) primary() string {
	for _, k := range t {
		if k != "null" {
			return k
		}
	}
	return ""
}

// refName returns the definition name a "$ref" points to.
func refName(ref string) string {
	return strings.TrimPrefix(ref, "#/$defs/")
}

// constString returns the schema's const as a string, if it is one.
func (s *Schema) constString() (string, bool) {
	if s == nil || len(s.Const) == 0 || s.Const[0] != '"' {
		return "", false
	}
	var v string
	if json.Unmarshal(s.Const, &v) != nil {
		return "", false
	}
	return v, true
}

// isNull reports whether the schema only admits null.
func (s *Schema) isNull() bool {
	return len(s.Type) == 1 && s.Type[0] == "null" && s.Ref == "" && len(s.AllOf) == 0
}

// variants returns the oneOf or anyOf alternatives.
func (s *Schema) variants() []*Schema {
	if len(s.OneOf) > 0 {
		return s.OneOf
	}
	return s.AnyOf
}

// schemaFile is one loaded schema document.
type schemaFile struct {
	Defs map[string]*Schema `json:"$defs"`
	// raw keeps each definition's canonical bytes to detect changed definitions.
	raw map[string]string
}

func loadSchema(path string) (*schemaFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f schemaFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rawDefs struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(b, &rawDefs); err != nil {
		return nil, err
	}
	f.raw = map[string]string{}
	for k, v := range rawDefs.Defs {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, err
		}
		c, _ := json.Marshal(x)
		f.raw[k] = string(c)
	}
	return &f, nil
}

// metaFile is meta.json / meta.unstable.json: method maps and protocol version.
type metaFile struct {
	AgentMethods  map[string]string `json:"agentMethods"`
	ClientMethods map[string]string `json:"clientMethods"`
	Version       int               `json:"version"`
}

func loadMeta(path string) (*metaFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m metaFile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// inputs are every schema document the generator reads.
type inputs struct {
	stable       *schemaFile
	unstable     *schemaFile
	meta         *metaFile
	metaUnstable *metaFile
	next         *schemaFile // the newer unstable schema the additive types come from
	nextStable   *schemaFile // the newer stable schema: what it holds is stable here
	supplement   *schemaFile // draft shapes absent from every released schema
}

func loadInputs(dir string) (*inputs, error) {
	var in inputs
	var err error
	if in.stable, err = loadSchema(filepath.Join(dir, "schema.json")); err != nil {
		return nil, err
	}
	if in.unstable, err = loadSchema(filepath.Join(dir, "schema.unstable.json")); err != nil {
		return nil, err
	}
	if in.meta, err = loadMeta(filepath.Join(dir, "meta.json")); err != nil {
		return nil, err
	}
	if in.metaUnstable, err = loadMeta(filepath.Join(dir, "meta.unstable.json")); err != nil {
		return nil, err
	}
	if in.next, err = loadSchema(filepath.Join(dir, "sdk2.4.0", "schema.unstable.json")); err != nil {
		return nil, err
	}
	if in.nextStable, err = loadSchema(filepath.Join(dir, "sdk2.4.0", "schema.json")); err != nil {
		return nil, err
	}
	if in.supplement, err = loadSchema(filepath.Join(dir, "supplement.json")); err != nil {
		return nil, err
	}
	return &in, nil
}

// sortedKeys returns m's keys in byte order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// collectRefs adds every definition s refers to, directly or nested.
func collectRefs(s *Schema, out map[string]bool) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		out[refName(s.Ref)] = true
	}
	for _, k := range sortedKeys(s.Properties) {
		collectRefs(s.Properties[k], out)
	}
	for _, l := range [][]*Schema{s.AllOf, s.AnyOf, s.OneOf} {
		for _, x := range l {
			collectRefs(x, out)
		}
	}
	collectRefs(s.Items, out)
	// additionalProperties are not followed: such objects are map[string]any.
}

// closure returns every definition reachable from roots.
func closure(defs map[string]*Schema, roots []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[k] || defs[k] == nil {
			continue
		}
		seen[k] = true
		refs := map[string]bool{}
		collectRefs(defs[k], refs)
		stack = append(stack, sortedKeys(refs)...)
	}
	return seen
}
