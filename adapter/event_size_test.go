package adapter

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fillStrings sets every string, []string and json.RawMessage reachable
// from v (through pointers, which it allocates) to a value one byte longer
// than the last, and returns the total length it wrote.
func fillStrings(v reflect.Value, next *int) int {
	total := 0
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return fillStrings(v.Elem(), next)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			total += fillStrings(v.Field(i), next)
		}
	case reflect.String:
		*next++
		v.SetString(string(make([]byte, *next)))
		return *next
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			*next++
			v.SetBytes(make([]byte, *next))
			return *next
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			total += fillStrings(v.Index(i), next)
		}
	}
	return total
}

// Every string in an Event, however deep, counts in Size: a field added
// later without counting it fails here.
func TestEventSizeCountsEveryString(t *testing.T) {
	var e Event
	next := 0
	want := fillStrings(reflect.ValueOf(&e).Elem(), &next)
	if got := e.Size(); got != want {
		t.Fatalf("Size() = %d, want %d (a string field is not counted)", got, want)
	}
	if (Event{}).Size() != 0 {
		t.Fatalf("empty event has size %d", (Event{}).Size())
	}
}
