package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParseModelList(f *testing.F) {
	f.Add([]byte(fakeModelList))
	f.Add([]byte("Available models\n\n-rf - evil\nx - y (default)\nTip: x\n"))
	f.Add([]byte("\x1b]0;title\x07a - b (current)\r\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		models := ParseModelList(out)
		seen := map[string]bool{}
		defaults := 0
		for _, m := range models {
			if ValidateModel(m.ID, nil) != nil || strings.HasPrefix(m.ID, "-") {
				t.Fatalf("invalid id accepted: %q", m.ID)
			}
			if seen[m.ID] {
				t.Fatalf("duplicate id %q", m.ID)
			}
			seen[m.ID] = true
			if m.Router != (m.ID == "auto") {
				t.Fatalf("router flag wrong for %q", m.ID)
			}
			if m.Default {
				defaults++
			}
		}
		if len(models) > MaxAuxOutputLines {
			t.Fatalf("%d models exceed the line bound", len(models))
		}
	})
}

// FuzzBoundJSON checks that bounded tool payloads stay valid JSON within
// their cap.
func FuzzBoundJSON(f *testing.F) {
	f.Add([]byte(`{"content":"`+strings.Repeat("x", 300)+`","totalLines":40}`), 128)
	f.Add([]byte(`[1,2,3]`), 4)
	f.Fuzz(func(t *testing.T, raw []byte, n int) {
		if !json.Valid(raw) || n < 32 || n > 1<<20 {
			return
		}
		out := boundJSON(raw, n)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out of %q: %q", raw, out)
		}
		if len(raw) > n && len(out) > n {
			t.Fatalf("bounded to %d bytes, cap %d", len(out), n)
		}
	})
}
