package safetext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds what a hostile agent put into titles and descriptions:
// OSC 52 (clipboard write), OSC 0 (window title), clear-screen, a C1 CSI,
// the right-to-left override and the isolates, and invalid UTF-8.
var hostile = []string{
	"\x1b]52;c;cHduZWQ=\x07",
	"\x1b]0;pwned\x07",
	"\x1b[2J\x1b[H",
	"a\u009b31mb",
	"evil\u202etxt.exe",
	"\u2066x\u2069\u2067y\u2068\u200e\u200f\u061c",
	"line\u2028sep\u2029",
	"bad \xff\xfe utf8",
	"tab\there\r\n",
}

func clean(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, Forbidden)
}

func TestTextRemovesEveryControlAndBidiCharacter(t *testing.T) {
	for _, s := range hostile {
		if got := Text(s); !clean(got) {
			t.Errorf("Text(%q) = %q still holds a forbidden rune", s, got)
		}
	}
	if got := Text("plain — text ✓"); got != "plain — text ✓" {
		t.Fatalf("ordinary text changed: %q", got)
	}
	if got := Text("a\tb"); got != "a b" {
		t.Fatalf("tab: %q", got)
	}
}

func TestJSONEscapesKeepTheValue(t *testing.T) {
	for _, s := range hostile {
		enc, err := json.Marshal(map[string]string{"v": s})
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(enc)
		if !clean(string(got)) {
			t.Errorf("JSON(%q) = %q still holds a forbidden rune", s, got)
		}
		var back, want map[string]string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("escaped JSON no longer parses: %v: %s", err, got)
		}
		_ = json.Unmarshal(enc, &want)
		if back["v"] != want["v"] {
			t.Errorf("value changed: %q, want %q", back["v"], want["v"])
		}
	}
}

func TestWriterKeepsLineEndsAndSplitRunes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	in := []byte("é\u202eok\x1b[31m\nnext ✓\n")
	for i := range in { // one byte at a time splits every multi-byte rune
		if _, err := w.Write(in[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "é\ufffdok\ufffd[31m\nnext ✓\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// FuzzSanitise checks that no C0 or C1 control, no bidirectional override
// or isolate and no invalid UTF-8 gets through Text, JSON or Writer,
// whatever the input and however a stream is split.
func FuzzSanitise(f *testing.F) {
	for _, s := range hostile {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, split uint8) {
		if got := Text(s); !clean(got) {
			t.Fatalf("Text(%q) = %q", s, got)
		}
		enc, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got := JSON(enc)
		if !clean(string(got)) {
			t.Fatalf("JSON(%q) = %q", enc, got)
		}
		var back, want string
		if err := json.Unmarshal(got, &back); err != nil || json.Unmarshal(enc, &want) != nil || back != want {
			t.Fatalf("JSON changed the value: %q → %q (%v)", enc, got, err)
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		b := []byte(s)
		step := int(split%8) + 1
		for i := 0; i < len(b); i += step {
			_, _ = w.Write(b[i:min(i+step, len(b))])
		}
		_ = w.Close()
		if out := strings.ReplaceAll(buf.String(), "\n", ""); !clean(out) {
			t.Fatalf("Writer(%q) = %q", s, buf.String())
		}
	})
}

// Lines sanitises as Text does and keeps only the line ends.
func TestLinesKeepsLineEndsOnly(t *testing.T) {
	for _, s := range hostile {
		got := Lines(s)
		if !clean(strings.ReplaceAll(got, "\n", "")) {
			t.Errorf("Lines(%q) = %q still holds a forbidden rune", s, got)
		}
		if want := Text(strings.ReplaceAll(s, "\n", "\u2028")); strings.ReplaceAll(got, "\n", "\ufffd") != want {
			t.Errorf("Lines(%q) = %q, differs from Text beyond line ends (%q)", s, got, want)
		}
	}
	if got := Lines("one\n\u202etwo\t\r\n"); got != "one\n\ufffdtwo \ufffd\n" {
		t.Fatalf("got %q", got)
	}
	if s := "plain\nlines"; Lines(s) != s {
		t.Fatal("ordinary text changed")
	}
}
