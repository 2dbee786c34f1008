package capture

import (
	"encoding/json"
	"strconv"
	"testing"
)

func TestParseMessageKinds(t *testing.T) {
	cases := []struct {
		raw                          string
		request, notification, reply bool
		failed                       bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, true, false, false, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, false, true, false, false},
		{`{"jsonrpc":"2.0","id":null,"method":"cursor/task"}`, false, true, false, false},
		{`{"jsonrpc":"2.0","id":"a","result":{}}`, false, false, true, false},
		{`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"x"}}`, false, false, true, true},
		{`{"jsonrpc":"2.0","id":2,"result":null,"error":null}`, false, false, true, false},
		{`{"jsonrpc":"2.0"}`, false, false, false, false},
	}
	for _, tc := range cases {
		m, err := ParseMessage([]byte(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if m.IsRequest() != tc.request || m.IsNotification() != tc.notification || m.IsResponse() != tc.reply || m.Failed() != tc.failed {
			t.Errorf("%s: request %t notification %t response %t failed %t", tc.raw,
				m.IsRequest(), m.IsNotification(), m.IsResponse(), m.Failed())
		}
	}
	for _, bad := range []string{`[1]`, `"x"`, `{"method":1}`, `{`} {
		if _, err := ParseMessage([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{
		{`1`, `1.0`, `1e0`, ` 1 `, `10e-1`},
		{`"a"`, `"\u0061"`},
		{`-0`, `0`, `0.0`},
		{`12345678901234567890123`},
		{`1.5`, `15e-1`},
	}
	seen := map[string]string{}
	for _, group := range same {
		want := IDKey(json.RawMessage(group[0]))
		for _, id := range group[1:] {
			if got := IDKey(json.RawMessage(id)); got != want {
				t.Errorf("IDKey(%s) = %q, want %q (as %s)", id, got, want, group[0])
			}
		}
		if other, dup := seen[want]; dup {
			t.Errorf("%s and %s share the key %q", group[0], other, want)
		}
		seen[want] = group[0]
	}
	// Distinct values never share a key: a string and the number it spells,
	// and integers beyond float64 precision.
	pairs := [][2]string{{`1`, `"1"`}, {`9007199254740993`, `9007199254740992`}, {`12345678901234567890123`, `12345678901234567890124`}}
	for _, p := range pairs {
		if IDKey(json.RawMessage(p[0])) == IDKey(json.RawMessage(p[1])) {
			t.Errorf("%s and %s share a key", p[0], p[1])
		}
	}
}

// FuzzIDKey checks that a number's key does not depend on its spelling: a
// value re-encoded by encoding/json gets the key of the original whenever
// the decode is exact (an integer of int64 range).
func FuzzIDKey(f *testing.F) {
	for _, s := range []string{`1`, `"a"`, `-7`, `1e3`, `1.5`, `null`, `{}`, `"\u00e9"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key := IDKey(json.RawMessage(raw))
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			return
		}
		switch x := v.(type) {
		case string:
			again, _ := json.Marshal(x)
			if IDKey(again) != key {
				t.Fatalf("string %s: key %q, re-encoded %s key %q", raw, key, again, IDKey(again))
			}
		case float64:
			if n, err := strconv.ParseInt(key, 10, 64); err == nil && float64(n) == x && x > -(1<<53) && x < 1<<53 {
				again := strconv.FormatInt(n, 10)
				if IDKey(json.RawMessage(again)) != key {
					t.Fatalf("number %s: key %q, %s key %q", raw, key, again, IDKey(json.RawMessage(again)))
				}
			}
		}
	})
}
