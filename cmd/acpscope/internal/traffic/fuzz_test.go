package traffic

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/internal/capture"
)

// FuzzAdd feeds the log any line, either direction: it keeps a valid,
// bounded frame, and its pretty text carries no character that could
// reorder or hide what a page shows.
func FuzzAdd(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`), []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}`), false)
	f.Add([]byte(`{"id":"\u202e","method":"session/update","params":{"sessionId":"\u0000","update":{"toolCallId":5}}}`), []byte("{\"id\":1,\"error\":{}}"), true)
	f.Add([]byte("{\"a\":\"\xff\xfe\u2028\"}"), []byte("[1,2]"), false)
	f.Fuzz(func(t *testing.T, a, b []byte, agentFirst bool) {
		l := New(Options{MaxFrameBytes: 64, MaxFrames: 3, MaxBytes: 2 * (frameOverhead + 64)})
		from, to := capture.FromClient, capture.FromAgent
		if agentFirst {
			from, to = to, from
		}
		l.Add(from, a, t0)
		l.Add(to, b, t0)
		_, _ = l.Tap(from).Write(append(append(a, '\n'), b...))
		p := l.Since(0, Filter{}, 10)
		if p.Kept > 3 || p.Bytes > 2*(frameOverhead+64) || p.Kept != len(p.Frames) {
			t.Fatalf("bounds: %d kept, %d bytes", p.Kept, p.Bytes)
		}
		for _, fr := range p.Frames {
			// At most 64 bytes kept, each invalid one replaced by U+FFFD (3).
			if !utf8.ValidString(fr.Text) || len(fr.Text) > 64*3 || fr.Truncated && fr.Size <= 64-utf8.UTFMax {
				t.Fatalf("frame %+v", fr)
			}
			for _, s := range []string{fr.Method, fr.Session, fr.Call, fr.ID, fr.Update} {
				if !utf8.ValidString(s) || len(s) > maxFact {
					t.Fatalf("fact %q", s)
				}
			}
			if pretty := Pretty(&fr); strings.ContainsFunc(pretty, func(r rune) bool { return r != '\n' && safetext.Forbidden(r) }) {
				t.Fatalf("pretty text %q carries a forbidden rune", pretty)
			}
		}
	})
}
