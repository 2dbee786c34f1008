package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// readLines runs the editor over typed with the limit max and returns
// each line read (or the error's text) and the echo.
func readLines(typed string, max int) ([]string, string) {
	var echo bytes.Buffer
	ed := &lineEditor{in: bufio.NewReader(strings.NewReader(typed)), echo: &echo, max: max, mark: "> "}
	var got []string
	for {
		line, err := ed.readLine()
		switch {
		case errors.Is(err, errLineTooLong):
			got = append(got, "(too long)")
			continue
		case err == io.EOF:
			got = append(got, line+"(EOF)")
			return got, echo.String()
		}
		got = append(got, line)
	}
}

// The editor's keys: Backspace (a whole UTF-8 character), Ctrl-W, Ctrl-U,
// cursor keys ignored, bracketed paste kept whole, a line over the limit
// dropped whole while the next one is read, Ctrl-D only on an empty line.
func TestLineEditorKeys(t *testing.T) {
	got, echo := readLines("héllo wörld\x7f\x7f\r"+
		"one two  \x17three\n"+
		"junk\x15kept\x1b[A\x1bOB\r"+
		"\x1b[200~a\rb\nc\x04\x1b[201~\r"+
		strings.Repeat("x", 20)+"\r"+
		"ab\x04c\r"+
		"\x04", 16)
	want := []string{"héllo wör", "one three", "kept", "a\nb\nc", "(too long)", "abc", "(EOF)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", got, want)
	}
	if !strings.Contains(echo, "héllo wörld\b \b\b \b\r\n") || !strings.Contains(echo, "^U\r\n> kept") {
		t.Fatalf("echo %q", echo)
	}
}

// A line exactly at the limit is kept; one byte more is refused whole.
func TestLineEditorLimit(t *testing.T) {
	got, _ := readLines(strings.Repeat("a", 8)+"\r"+strings.Repeat("a", 9)+"\r", 8)
	if len(got) != 3 || got[0] != strings.Repeat("a", 8) || got[1] != "(too long)" {
		t.Fatalf("got %q", got)
	}
}

// Whatever is typed, the editor neither panics nor keeps a line over its
// limit, and it ends at the end of the input.
func FuzzLineEditor(f *testing.F) {
	f.Add("hello\r\x1b[200~a\nb\x1b[201~\r\x17\x15\x7f\x04")
	f.Add("\x1b[\x1b[200~\x1b")
	f.Fuzz(func(t *testing.T, typed string) {
		got, _ := readLines(typed, 16)
		if len(got) > len(typed)+1 {
			t.Fatalf("%d lines from %d bytes", len(got), len(typed))
		}
		for _, l := range got {
			if len(strings.TrimSuffix(l, "(EOF)")) > 16 && l != "(too long)" {
				t.Fatalf("a line of %d bytes passed the limit", len(l))
			}
		}
	})
}
