package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// decodeBothWays decodes data into a fresh value of the indexed type with the
// fast path and with encoding/json alone.
func decodeBothWays(it indexedType, data []byte) (fast, slow any, fastErr, slowErr error) {
	fast = it.New()
	fastErr = json.Unmarshal(data, fast)
	fastDecodeOff.Store(true)
	defer fastDecodeOff.Store(false)
	slow = it.New()
	slowErr = json.Unmarshal(data, slow)
	return
}

// FuzzFastDecodeMatchesEncodingJSON: the one-pass decoder must give exactly
// what encoding/json gives (the same value, or an error in both), for every
// generated message and union.
func FuzzFastDecodeMatchesEncodingJSON(f *testing.F) {
	all := append(append([]indexedType(nil), generatedMessages...), generatedUnions...)
	for i, it := range all {
		dir := "messages"
		if i >= len(generatedMessages) {
			dir = "unions"
		}
		matches, _ := filepath.Glob(filepath.Join("testdata", "golden", dir, it.Name+"*.json"))
		for _, m := range matches {
			if data, err := os.ReadFile(m); err == nil {
				f.Add(uint16(i), data)
			}
		}
	}
	f.Add(uint16(0), []byte(`{"sessionId":"a","SESSIONID":"b"}`))
	f.Add(uint16(0), []byte(`{"sessionId":"a","sessionId":"b"}`))
	f.Add(uint16(0), []byte(`{"a":1e400}`))
	f.Fuzz(func(t *testing.T, which uint16, data []byte) {
		it := all[int(which)%len(all)]
		fast, slow, fastErr, slowErr := decodeBothWays(it, data)
		if (fastErr == nil) != (slowErr == nil) {
			t.Fatalf("%s %q: fast err %v, encoding/json err %v", it.Name, data, fastErr, slowErr)
		}
		if fastErr != nil {
			if fastErr.Error() != slowErr.Error() {
				t.Fatalf("%s %q: errors differ\nfast %v\nslow %v", it.Name, data, fastErr, slowErr)
			}
			return
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s %q: values differ\nfast %#v\nslow %#v", it.Name, data, fast, slow)
		}
	})
}

// The same check over the committed fixtures, as a plain test.
func TestFastDecodeMatchesOnGoldenFixtures(t *testing.T) {
	check := func(it indexedType, path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fast, slow, fastErr, slowErr := decodeBothWays(it, data)
		if fastErr != nil || slowErr != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%s: fast %v / %v", path, fastErr, slowErr)
		}
	}
	for _, it := range generatedMessages {
		check(it, filepath.Join("testdata", "golden", "messages", it.Name+".json"))
	}
	for _, it := range generatedUnions {
		for _, v := range it.Variants {
			check(it, filepath.Join("testdata", "golden", "unions", it.Name+"."+v+".json"))
		}
	}
}

// FuzzNumbers checks the number rule on arbitrary number literals: the fast
// and general paths agree, and whatever decodes re-encodes to the same
// number (exactly when it stayed json.Number).
func FuzzNumbers(f *testing.F) {
	for _, s := range []string{"0", "-1", "1.5", "9007199254740993", "3.14159265358979323846", "1e21", "1E-7", "0.1", "-0.0", "123456789012345678901234567890", "1.0000000000000002", "1E-0000010000000", "1e-0000000000000000400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, num string) {
		// The second text holds a long digit run, which sends the general
		// decoder down its exact-number path for the whole message.
		for _, text := range []string{"t", "12345678901234567"} {
			checkNumber(t, num, text)
		}
	})
}

// checkNumber decodes one number literal in _meta both ways and compares.
func checkNumber(t *testing.T, num, text string) {
	t.Helper()
	data := []byte(`{"_meta":{"n":` + num + `},"text":"` + text + `","type":"text"}`)
	it := indexedType{Name: "ContentBlock", New: func() any { return new(ContentBlock) }}
	fast, slow, fastErr, slowErr := decodeBothWays(it, data)
	if (fastErr == nil) != (slowErr == nil) {
		t.Fatalf("%s: fast %v slow %v", data, fastErr, slowErr)
	}
	if fastErr != nil {
		return
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: fast %#v slow %#v", data, fast.(*ContentBlock).Text.Meta, slow.(*ContentBlock).Text.Meta)
	}
	v := fast.(*ContentBlock).Text.Meta["n"]
	if n, ok := v.(json.Number); ok {
		out, err := json.Marshal(fast)
		if err != nil || !bytes.Contains(out, []byte(`"n":`+string(n)+`}`)) {
			t.Fatalf("%s: json.Number %s re-encoded as %s (%v)", data, n, out, err)
		}
	}
}
