package persistence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// S40 [.18]: 8 goroutines upsert one key.
func TestSameKeyConcurrent(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		terminalAt := t0.Add(4 * time.Second)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				f := frame("tc1", func(f *Frame) {
					f.TotalTokens = int64(100 + i)
					f.ObservedAt = t0.Add(time.Duration(i) * time.Second)
					f.ToolStatus = "in_progress"
					if i == 4 {
						f.ToolStatus = "completed"
					}
				})
				if err := s.Upsert(e.ctx, *f); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		r := one(t, s, "S")
		if *r.TotalTokens < 100 || *r.TotalTokens > 107 {
			t.Fatalf("tokens %d not a submitted value", *r.TotalTokens)
		}
		if r.SettledAt == nil || !r.SettledAt.Equal(terminalAt) || *r.ToolStatus != "completed" {
			t.Fatalf("settled %v status %v", r.SettledAt, *r.ToolStatus)
		}
	})
}

// S41 [.19]: fan-outs of 3, 4, 5 and 8 distinct calls, concurrently.
func TestFanOutConcurrent(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		var wg sync.WaitGroup
		want := 0
		for _, n := range []int{3, 4, 5, 8} {
			for i := range n {
				want++
				wg.Go(func() {
					s.Record(e.ctx, frame(fmt.Sprintf("fan%d-%d", n, i), func(f *Frame) {
						f.Model = fmt.Sprintf("m-%d-%d", n, i)
						f.TotalTokens = int64(n*100 + i + 1)
					}))
				})
			}
		}
		wg.Wait()
		rows, err := s.ListBySession(e.ctx, "S")
		if err != nil || len(rows) != want {
			t.Fatalf("%d rows, want %d (%v)", len(rows), want, err)
		}
		for _, r := range rows {
			var n, i int
			fmt.Sscanf(r.ToolCallID, "fan%d-%d", &n, &i)
			if *r.Model != fmt.Sprintf("m-%d-%d", n, i) || *r.TotalTokens != int64(n*100+i+1) {
				t.Fatalf("row %s holds another call's data: %+v", r.ToolCallID, r)
			}
		}
		if c := s.Counters(); c.Failed != 0 || c.Persisted != int64(want) {
			t.Fatalf("counters %+v", c)
		}
	})
}

// S42 [.48, .19]: a late frame from an earlier execution leaves the later
// execution's row identical in every column.
func TestCrossExecution(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		t.Run(fmt.Sprint("concurrent=", concurrent), func(t *testing.T) {
			engines(t, func(t *testing.T, e *env) {
				s := liveEnv(t, e)
				b := frame("tc1", func(f *Frame) {
					f.ExecutionID, f.ToolStatus, f.TotalTokens, f.DurationMs, f.Model, f.ToolUseCount = "execB", "completed", 900, 50, "mB", ptr(3)
				})
				s.Record(e.ctx, b)
				bRow := one(t, s, "S")
				a := frame("tc1", func(f *Frame) {
					f.ExecutionID, f.ToolStatus, f.TotalTokens, f.Model, f.ObservedAt = "execA", "completed", 10, "mA", t0.Add(-time.Minute)
				})
				if concurrent {
					var wg sync.WaitGroup
					for i := range 8 {
						wg.Go(func() {
							if i%2 == 0 {
								s.Record(e.ctx, a)
							} else {
								s.Record(e.ctx, b)
							}
						})
					}
					wg.Wait()
				} else {
					s.Record(e.ctx, a)
				}
				rows, _ := s.ListBySession(e.ctx, "S")
				if len(rows) != 2 {
					t.Fatalf("%d rows", len(rows))
				}
				aRow, bAfter := rows[0], rows[1]
				if mustJSON(bAfter) != mustJSON(bRow) ||
					deref(bAfter.Model) != "mB" || deref(bAfter.TotalTokens) != int64(900) || deref(bAfter.DurationMs) != int64(50) ||
					deref(bAfter.ToolUseCount) != int64(3) || !bAfter.SettledAt.Equal(t0) {
					t.Fatalf("B changed:\n%+v\n%+v", bRow, bAfter)
				}
				if aRow.AgentExecutionID != "execA" || *aRow.Model != "mA" || *aRow.TotalTokens != 10 {
					t.Fatalf("A %+v", aRow)
				}
			})
		})
	}
}

// S43 [.20]
func TestCascade(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		e.session("S2", "T")
		s.Record(e.ctx, frame("tc1"))
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.TaskSessionID, f.TurnID = "S2", "" }))
		e.exec(`DELETE FROM task_session_turns WHERE id = 'U1'`)
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE task_session_id = 'S'`); n != 1 {
			t.Fatal("deleting a turn erased fan-out evidence")
		}
		e.exec(`DELETE FROM task_sessions WHERE id = 'S'`)
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE task_session_id = 'S'`); n != 0 {
			t.Fatal("cascade did not remove the session's rows")
		}
		if n := e.count(`SELECT COUNT(*) FROM task_session_subagents WHERE task_session_id = 'S2'`); n != 1 {
			t.Fatal("another session's row went")
		}
	})
}

// S44 [.17]
func TestListOrder(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		type k struct {
			at       time.Time
			tc, exec string
		}
		keys := []k{
			{t0, "tc-z", "E1"}, {t0, "tc-a", "E2"}, {t0, "tc-a", "E1"}, {t0, "tc-B", "E1"},
			{t0.Add(-time.Microsecond), "tc-q", "E9"},
		}
		rand.New(rand.NewPCG(3, 4)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, key := range keys {
			s.Record(e.ctx, frame(key.tc, func(f *Frame) { f.ExecutionID, f.ObservedAt = key.exec, key.at }))
		}
		want := []string{"tc-q/E9", "tc-B/E1", "tc-a/E1", "tc-a/E2", "tc-z/E1"}
		for _, list := range []func() ([]SubagentContext, error){
			func() ([]SubagentContext, error) { return s.ListBySession(e.ctx, "S") },
			func() ([]SubagentContext, error) { return s.ListByTurn(e.ctx, "U1") },
		} {
			rows, err := list()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, r.ToolCallID+"/"+r.AgentExecutionID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("order %v, want %v", got, want)
			}
		}
	})
}
