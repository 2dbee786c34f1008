package cursor

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeClock is a manual clock for age tests.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestStore(l Limits) (*pendingStore, *Stats, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	stats := &Stats{}
	return newPendingStore(l, clock.now, stats), stats, clock
}

func TestPendingDuplicatesMergeFirstNonEmpty(t *testing.T) {
	s, stats, _ := newTestStore(Limits{})
	if !s.put("s1", TaskParams{ToolCallID: "t", Prompt: "A"}) {
		t.Fatal("first put reported no change")
	}
	if !s.put("s1", TaskParams{ToolCallID: "t", Prompt: "B", Model: "m"}) {
		t.Fatal("second put filled model but reported no change")
	}
	if s.put("s1", TaskParams{ToolCallID: "t", Prompt: "C"}) {
		t.Fatal("third put changed nothing but reported a change")
	}
	got, ok := s.take("s1", "t")
	want := TaskParams{ToolCallID: "t", Prompt: "A", Model: "m"}
	if !ok || got != want {
		t.Fatalf("take = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := s.take("s1", "t"); ok {
		t.Fatal("entry taken twice")
	}
	if stats.PendingStored != 1 || stats.PendingMerged != 1 || stats.PendingMatched != 1 {
		t.Fatalf("stats %+v", *stats)
	}
	if len(s.sessions) != 0 {
		t.Fatal("empty session kept")
	}
}

func TestPendingCountCap(t *testing.T) {
	s, stats, _ := newTestStore(Limits{})
	for i := 0; i < DefaultMaxPending+1; i++ {
		s.put("s1", TaskParams{ToolCallID: fmt.Sprint("t", i), Prompt: "p"})
	}
	if n := s.len("s1"); n != DefaultMaxPending {
		t.Fatalf("len = %d, want %d", n, DefaultMaxPending)
	}
	if _, ok := s.take("s1", "t0"); ok {
		t.Fatal("oldest entry was not the one evicted")
	}
	if _, ok := s.take("s1", "t1"); !ok {
		t.Fatal("second-oldest entry evicted")
	}
	if stats.PendingEvictedCount != 1 {
		t.Fatalf("evicted %d, want 1", stats.PendingEvictedCount)
	}
}

func TestPendingDuplicateKeepsArrivalOrder(t *testing.T) {
	s, _, _ := newTestStore(Limits{MaxPending: 2})
	s.put("s1", TaskParams{ToolCallID: "a", Prompt: "p"})
	s.put("s1", TaskParams{ToolCallID: "b", Prompt: "p"})
	s.put("s1", TaskParams{ToolCallID: "a", Model: "m"}) // merge, not a refresh
	s.put("s1", TaskParams{ToolCallID: "c", Prompt: "p"})
	if _, ok := s.take("s1", "a"); ok {
		t.Fatal("a merged duplicate must not move its entry to the newest slot")
	}
}

func TestPendingByteBudget(t *testing.T) {
	s, stats, _ := newTestStore(Limits{MaxPendingBytes: 100})
	s.put("s1", TaskParams{ToolCallID: "a", Prompt: strings.Repeat("x", 60)})
	s.put("s1", TaskParams{ToolCallID: "b", Prompt: strings.Repeat("x", 60)})
	if s.len("s1") != 1 || stats.PendingEvictedBytes != 1 {
		t.Fatalf("len %d, stats %+v", s.len("s1"), *stats)
	}
	if _, ok := s.take("s1", "b"); !ok {
		t.Fatal("newest evicted instead of oldest")
	}
	// A single entry above the budget is kept alone: the field caps bound it.
	s.put("s1", TaskParams{ToolCallID: "c", Prompt: strings.Repeat("x", 200)})
	if s.len("s1") != 1 {
		t.Fatal("lone oversized entry dropped")
	}
	if sp := s.sessions["s1"]; sp.bytes != 201 {
		t.Fatalf("byte accounting %d, want 201", sp.bytes)
	}
}

func TestPendingAge(t *testing.T) {
	s, stats, clock := newTestStore(Limits{MaxPendingAge: time.Minute})
	s.put("s1", TaskParams{ToolCallID: "old", Prompt: "p"})
	clock.advance(30 * time.Second)
	s.put("s1", TaskParams{ToolCallID: "young", Prompt: "p"})
	clock.advance(31 * time.Second)
	if _, ok := s.take("s1", "old"); ok {
		t.Fatal("expired entry applied")
	}
	if _, ok := s.take("s1", "young"); !ok {
		t.Fatal("entry within its age lost")
	}
	if stats.PendingEvictedAge != 1 {
		t.Fatalf("age evictions %d", stats.PendingEvictedAge)
	}
	if len(s.sessions) != 0 {
		t.Fatal("session map kept after its last entry left")
	}
}

func TestPendingSessionsIsolated(t *testing.T) {
	s, stats, _ := newTestStore(Limits{})
	s.put("s1", TaskParams{ToolCallID: "t", Prompt: "one"})
	s.put("s2", TaskParams{ToolCallID: "t", Prompt: "two"})
	if _, ok := s.take("s3", "t"); ok {
		t.Fatal("matched across sessions")
	}
	s.clearSession("s1")
	if s.len("s1") != 0 || s.len("s2") != 1 {
		t.Fatalf("clearing s1 touched s2: %d %d", s.len("s1"), s.len("s2"))
	}
	got, ok := s.take("s2", "t")
	if !ok || got.Prompt != "two" {
		t.Fatalf("s2 entry %+v %v", got, ok)
	}
	s.put("s1", TaskParams{ToolCallID: "x", Prompt: "p"})
	s.put("s2", TaskParams{ToolCallID: "y", Prompt: "p"})
	s.clearAll()
	if s.total() != 0 || len(s.sessions) != 0 {
		t.Fatal("clearAll left entries")
	}
	if stats.PendingSwept != 3 {
		t.Fatalf("swept %d, want 3", stats.PendingSwept)
	}
}

func TestPendingSessionCap(t *testing.T) {
	s, stats, clock := newTestStore(Limits{MaxPendingSessions: 2})
	s.put("s1", TaskParams{ToolCallID: "a", Prompt: "p"})
	clock.advance(time.Second)
	s.put("s2", TaskParams{ToolCallID: "b", Prompt: "p"})
	clock.advance(time.Second)
	s.put("s1", TaskParams{ToolCallID: "c", Prompt: "p"}) // s1 is now the fresher session
	clock.advance(time.Second)
	s.put("s3", TaskParams{ToolCallID: "d", Prompt: "p"})
	if s.len("s2") != 0 || s.len("s1") != 2 || s.len("s3") != 1 {
		t.Fatalf("lens s1 %d s2 %d s3 %d", s.len("s1"), s.len("s2"), s.len("s3"))
	}
	if stats.PendingEvictedSession != 1 {
		t.Fatalf("evicted %d", stats.PendingEvictedSession)
	}
}
