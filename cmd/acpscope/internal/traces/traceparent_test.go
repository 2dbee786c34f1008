package traces

import (
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestTraceparent(t *testing.T) {
	good := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	sc, ok := ParseTraceparent(good)
	if !ok || FormatTraceparent(sc) != good || !sc.IsRemote() {
		t.Fatalf("%s: %v %v", good, sc, ok)
	}
	for _, bad := range []string{"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
		"0x-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"} {
		if _, ok := ParseTraceparent(bad); ok {
			t.Errorf("%q was taken", bad)
		}
	}
	if _, ok := ParseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-future"); !ok {
		t.Error("a later version with more fields was refused")
	}
}

// FuzzTraceparent: whatever a peer sends in _meta.traceparent, parsing
// never panics, and what it takes formats back to a value it takes again.
func FuzzTraceparent(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	f.Add("zz")
	f.Fuzz(func(t *testing.T, v string) {
		sc, ok := ParseTraceparent(v)
		if !ok {
			return
		}
		again, ok := ParseTraceparent(FormatTraceparent(sc))
		if !ok || again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.TraceFlags() != sc.TraceFlags()&trace.FlagsSampled {
			t.Fatalf("%q → %v does not round-trip", v, sc)
		}
	})
}
