package acp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A string token is scanned in linear work however many escapes it holds:
// source code in a tool call's output has an escaped newline every few
// dozen bytes, and a frame may be 64 MiB.
func TestScanStringLinearInEscapes(t *testing.T) {
	line := bytes.Repeat([]byte(`func f() {}\n\t`), 1<<16) // an escape every 7 bytes, ~900 KiB
	text := append(append([]byte(`"`), line...), `" `...)
	text = append(text, bytes.Repeat([]byte(`"later" `), 1000)...) // quotes after the string
	s := jsonScanner{data: text}
	escaped, err := s.scanString()
	if err != nil || !escaped || s.pos != len(line)+2 {
		t.Fatalf("scanString: pos %d of %d, escaped %v, %v", s.pos, len(line)+2, escaped, err)
	}
	if s.searched > 2*len(line)+2 {
		t.Errorf("searched %d bytes for a %d-byte string: more than twice its length", s.searched, len(line))
	}
	var want string
	if err := json.Unmarshal(text[:s.pos], &want); err != nil || unquote(text[1:s.pos-1], true) != want {
		t.Errorf("the string decodes differently from encoding/json (%v)", err)
	}
}
