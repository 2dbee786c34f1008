package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnionRoundTrip decodes arbitrary bytes into every generated union (the
// first byte picks which) and checks that whatever decodes re-encodes, and
// that the encoding is a fixed point: decode(encode(x)) encodes identically.
func FuzzUnionRoundTrip(f *testing.F) {
	for i, u := range generatedUnions {
		for _, v := range u.Variants {
			if data, err := os.ReadFile(filepath.Join("testdata", "golden", "unions", u.Name+"."+v+".json")); err == nil {
				f.Add(uint8(i), data)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"sessionUpdate":"x","a":1e400}`))
	f.Add(uint8(0), []byte(`null`))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		u := generatedUnions[int(which)%len(generatedUnions)]
		v := u.New()
		if json.Unmarshal(data, v) != nil {
			return
		}
		first, err := json.Marshal(v)
		if err != nil && strings.Contains(err.Error(), "no variant set") {
			// The payload was null or lacked a required union member (e.g.
			// an "id"), so that union decoded empty (null is a no-op);
			// encoding reports it, as upstream.
			return
		}
		if err != nil {
			t.Fatalf("%s: %q decoded but does not encode: %v", u.Name, data, err)
		}
		w := u.New()
		if err := json.Unmarshal(first, w); err != nil {
			t.Fatalf("%s: own encoding %s does not decode: %v", u.Name, first, err)
		}
		second, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("%s: %v", u.Name, err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("%s: not a fixed point\n first %s\nsecond %s", u.Name, first, second)
		}
	})
}

// FuzzPeekString checks the discriminator scanner against encoding/json.
func FuzzPeekString(f *testing.F) {
	f.Add([]byte(`{"type":"text","text":"x"}`))
	f.Add([]byte(`{"a":{"type":"no"},"type":"yes"}`))
	f.Add([]byte(`{"type":"a","type":"b"}`))
	f.Add([]byte(`{"t\u0079pe":"esc\"aped"}`))
	f.Add([]byte(`{"type":5}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, isString, err := peekString(data, "type")
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return // invalid input: any answer is fine as long as nothing panics
		}
		if err != nil {
			t.Fatalf("%q: valid object, scanner error %v", data, err)
		}
		raw, ok := m["type"]
		var want string
		wantString := ok && json.Unmarshal(raw, &want) == nil && len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '"'
		if isString != wantString || (wantString && got != want) {
			t.Fatalf("%q: got %q,%v want %q,%v", data, got, isString, want, wantString)
		}
	})
}
