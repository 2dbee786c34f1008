package persistence

import (
	"context"
	"slices"
	"testing"
	"unicode/utf8"
)

// nearIDs are ids that differ only where an encoding could fold them:
// NUL, U+FFFD, the encoding's own mark and escape, invalid UTF-8.
var nearIDs = []string{"tc", "tc\x00", "tc\ufffd", "tc\x00\x00", "\uffffMtc", "tc%00", "tc%", "tc\xff"}

// encodeID is injective and decodeID inverts it; every stored form is
// text PostgreSQL holds; an ordinary id is stored as it is.
func TestIDEncoding(t *testing.T) {
	seen := map[string]string{}
	for _, id := range append(slices.Clone(nearIDs), "", "a%b", "\uffff", "%", "x\xc3") {
		enc := encodeID(id)
		if other, dup := seen[enc]; dup {
			t.Fatalf("%q and %q share the stored form %q", id, other, enc)
		}
		seen[enc] = id
		if !utf8.ValidString(enc) || slices.Contains([]byte(enc), 0) {
			t.Fatalf("%q stored as %q: not valid PostgreSQL text", id, enc)
		}
		if dec := decodeID(enc); dec != id {
			t.Fatalf("%q → %q → %q", id, enc, dec)
		}
	}
	if encodeID("toolu_01ABC") != "toolu_01ABC" {
		t.Fatal("an ordinary id is not stored as it is")
	}
}

func FuzzIDEncoding(f *testing.F) {
	for _, id := range nearIDs {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		enc := encodeID(id)
		if decodeID(enc) != id || !utf8.ValidString(enc) || slices.Contains([]byte(enc), 0) {
			t.Fatalf("%q → %q → %q", id, enc, decodeID(enc))
		}
	})
}

// A session id with a NUL (valid JSON: "s\u0000x") keeps its cards on both
// engines: the session row, the card rows and the texts agree, reads
// return the ids given, and ids that differ by NUL, U+FFFD or the
// encoding's own characters are distinct rows — through Store.Record and
// through the Writer.
func TestOpaqueIDsRoundTrip(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := e.store(WithSubagentText())
		ctx := context.Background()
		session, lookalike := "s\x00x", "s\ufffdx"
		for _, sid := range []string{session, lookalike} {
			if err := s.EnsureSession(ctx, sid, sid); err != nil {
				t.Fatalf("EnsureSession(%q): %v", sid, err)
			}
		}
		for i, id := range nearIDs {
			s.Record(ctx, &Frame{TaskSessionID: session, TaskID: session, ToolCallID: id, ExecutionID: "E\x00",
				TurnID: "U\x00", ParentToolCallID: "p\x00", ChildSessionID: "child\x00", Description: id,
				Prompt: "prompt " + id, ToolStatus: []string{"pending", "complete"}[i%2], ObservedAt: t0})
		}
		w := NewWriter(s, WriterOptions{EnsureSessions: true})
		for _, id := range []string{"tc\x00", "tc\ufffd"} {
			w.Record(&Frame{TaskSessionID: lookalike, TaskID: lookalike, ToolCallID: id, Description: "w " + id, ObservedAt: t0})
		}
		w.Record(&Frame{TaskSessionID: "child\x00", TaskID: "child\x00", ToolCallID: "c1", ObservedAt: t0})
		if acc := w.Close(ctx); acc.NotStored() != 0 {
			t.Fatalf("writer accounting %+v", acc)
		}
		if c := s.Counters(); c.Failed != 0 {
			t.Fatalf("counters %+v; logs:\n%s", c, e.logs)
		}
		rows, err := s.ListBySession(ctx, session)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			if r.TaskSessionID != session || r.AgentExecutionID != "E\x00" || deref(r.TurnID) != "U\x00" ||
				deref(r.ParentToolCallID) != "p\x00" || deref(r.ChildSessionID) != "child\x00" || deref(r.Description) != cleanText(r.ToolCallID) {
				t.Fatalf("row %q: ids or description changed: %+v", r.ToolCallID, r)
			}
			texts, err := s.SubagentTexts(ctx, session, "E\x00", r.ToolCallID)
			if err != nil || deref(texts.Prompt) != cleanText("prompt "+r.ToolCallID) {
				t.Fatalf("texts of %q: %+v %v", r.ToolCallID, texts, err)
			}
			got = append(got, r.ToolCallID)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(nearIDs))
		if !slices.Equal(got, want) {
			t.Fatalf("tool call ids %q, want %q", got, want)
		}
		other, err := s.ListBySession(ctx, lookalike)
		if err != nil || len(other) != 2 || other[0].ToolCallID == other[1].ToolCallID {
			t.Fatalf("the look-alike session: %+v %v", other, err)
		}
		sum, ok, err := s.Session(ctx, session)
		if err != nil || !ok || sum.ID != session || sum.Cards != len(nearIDs) || !slices.Equal(sum.ChildSessions, []string{"child\x00"}) ||
			!slices.Equal(sum.Executions, []string{"E\x00"}) {
			t.Fatalf("Session: %+v %v %v", sum, ok, err)
		}
		fam, err := s.SessionFamily(ctx, session)
		if err != nil || !slices.Equal(fam, []string{session, "child\x00"}) {
			t.Fatalf("family %q %v", fam, err)
		}
		mark, err := s.Changes(ctx, session)
		if err != nil || mark.Cards != int64(len(nearIDs)) {
			t.Fatalf("changes %+v %v", mark, err)
		}
	})
}
