package acp

import "encoding/json"

// Nullable is a patch field: it tells an omitted property (keep the previous
// value), an explicit null (clear it) and a value (replace it) apart.
//
// Use it with the `omitzero` JSON option, as the generated types do: an unset
// Nullable is omitted, a null one is written as null.
//
//	var u SubagentUpdate // decoded from the wire
//	if v, ok := u.Title.Value(); ok { … replace … } else if u.Title.Null() { … clear … }
type Nullable[T any] struct {
	value T
	set   bool
	null  bool
}

// NewNullable returns a Nullable holding v.
func NewNullable[T any](v T) Nullable[T] { return Nullable[T]{value: v, set: true} }

// NewNull returns a Nullable holding an explicit null.
func NewNull[T any]() Nullable[T] { return Nullable[T]{set: true, null: true} }

// Set reports whether the property was present: a value or an explicit null.
func (n Nullable[T]) Set() bool { return n.set }

// Null reports whether the property is an explicit null.
func (n Nullable[T]) Null() bool { return n.set && n.null }

// Value returns the value and true when the property holds one (not null, not omitted).
func (n Nullable[T]) Value() (T, bool) {
	if !n.set || n.null {
		var zero T
		return zero, false
	}
	return n.value, true
}

// IsZero reports whether the property is omitted; `omitzero` uses it.
func (n Nullable[T]) IsZero() bool { return !n.set }

// MarshalJSON writes the value, or null for a null or omitted property.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if !n.set || n.null {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON reads null as an explicit null and anything else as a value.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Nullable[T]{set: true, null: true}
		return nil
	}
	var v T
	if err := decodeExact(b, &v); err != nil {
		return err
	}
	*n = Nullable[T]{value: v, set: true}
	return nil
}
