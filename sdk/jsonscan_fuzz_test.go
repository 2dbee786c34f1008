package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzScanner: the scanner accepts exactly the JSON texts encoding/json
// accepts, raw returns the whole value, and a string token decodes (unquote)
// to what encoding/json decodes it to.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-0.5e+3,true,false,null,{}],"b":"x\n\u00e9\ud83d\ude00"}`, `[]`, ` "plain" `,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00x"`, "\"\xff\xfe\"", "\"\xed\xa0\x80\"",
		`"\/\\\"\b\f\r\t"`, `"\u00"`, `"\x"`, "\"a\x01\"", `01`, `-`, `1.`, `1e`, `1e+`, `[1,]`, `{"a":1,}`,
		`{"a" 1}`, `{1:2}`, `[1 2]`, `nul`, `truex`, `{} {}`, ``, `  `, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := jsonScanner{data: data}
		raw, err := s.raw()
		ok := err == nil && s.atEnd()
		if want := json.Valid(data); ok != want {
			t.Fatalf("%q: scanner accepts %v (%v), encoding/json %v", data, ok, err, want)
		}
		if !ok {
			return
		}
		if string(raw) != string(trimJSONSpace(data)) {
			t.Fatalf("%q: raw value %q", data, raw)
		}
		if raw[0] != '"' {
			return
		}
		str := jsonScanner{data: raw}
		escaped, err := str.scanString()
		if err != nil || str.pos != len(raw) {
			t.Fatalf("%q: string token rescanned: %v at %d", raw, err, str.pos)
		}
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := unquote(raw[1:len(raw)-1], escaped); got != want {
			t.Fatalf("%q: unquote gives %q, encoding/json %q", raw, got, want)
		}
	})
}
