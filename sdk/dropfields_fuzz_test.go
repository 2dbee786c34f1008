package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDropFields: removing members from an object an agent sent (the lenient
// decoders' retry) yields valid JSON holding exactly the kept members, and
// the input itself when nothing is dropped.
func FuzzDropFields(f *testing.F) {
	f.Add([]byte(`{"name":5,"title":"x","name":"y"}`), uint8(1))
	f.Add([]byte(` { "a" : [1, {"b":2}] , "\u00e9":null } `), uint8(2))
	f.Add([]byte(`{}`), uint8(0xff))
	f.Add([]byte(`{"<&>":"\ud800","k\"":{}}`), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, mask uint8) {
		var orig map[string]json.RawMessage
		if json.Unmarshal(data, &orig) != nil || orig == nil {
			return
		}
		want := map[string]json.RawMessage{}
		i, dropped := 0, false
		out, err := dropFields(data, func(key string, value []byte) bool {
			drop := mask&(1<<(i%8)) != 0
			i++
			dropped = dropped || drop
			if !drop {
				want[key] = append(json.RawMessage(nil), value...)
			}
			return drop
		})
		if err != nil {
			t.Fatalf("dropFields(%q): %v", data, err)
		}
		if !dropped && !bytes.Equal(out, data) {
			t.Fatalf("nothing dropped but %q became %q", data, out)
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("dropFields(%q) = %q: %v", data, out, err)
		}
		if len(got) != len(want) {
			t.Fatalf("dropFields(%q) = %q: %d members, want %d", data, out, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("dropFields(%q) = %q: member %q is %q, want %q", data, out, k, got[k], v)
			}
		}
	})
}
