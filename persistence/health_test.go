package persistence

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// healthEnv is a migrated store whose capture_since is K.
func healthEnv(t *testing.T, e *env, k time.Time) *Store {
	s := liveEnv(t, e)
	e.exec(`UPDATE kandev_meta SET value = ? WHERE key = ?`, keyText(k), KeyCaptureSince)
	return s
}

func (e *env) row(tc, exec string, at any) {
	e.t.Helper()
	if t, ok := at.(time.Time); ok {
		at = e.ts(t)
	}
	e.exec(`INSERT INTO task_session_subagents (id, task_session_id, task_id, tool_call_id, agent_execution_id, observed_at, updated_at)
VALUES (?, 'S', 'T', ?, ?, ?, ?)`, newUUID(), tc, exec, at, at)
}

func (e *env) msg(id, tc string, at any) {
	e.t.Helper()
	e.message(message{ID: id, Session: "S", Task: "T", Metadata: subagentMeta(tc, "", nil), Created: at})
}

// S59 [.35, .34, .43, .39]
func TestHealthStates(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		ran := false
		s.hooks.betweenHealthQueries = func() { ran = true }
		cases := []struct {
			keys     map[string]string
			state    ActivationState
			compared bool
			reliable bool
			problem  bool
		}{
			{map[string]string{KeyCaptureSince: keyText(t0), KeyBackfillThrough: "", KeyExecutionSince: keyText(t0)}, StateFullyActivated, true, true, false},
			{map[string]string{KeyCaptureSince: keyText(t0), KeyBackfillThrough: keyText(t0)}, StateAmendmentIncomplete, true, false, false},
			{map[string]string{KeyExecutionSince: keyText(t0)}, StateBackfillIncomplete, false, true, false},
			{map[string]string{}, StateNotActivated, false, false, false},
			{map[string]string{KeyCaptureSince: "yesterday", KeyBackfillThrough: "", KeyExecutionSince: keyText(t0)}, StateFullyActivated, false, true, true},
			{map[string]string{KeyCaptureSince: "2026-08-01T00:00:00Z", KeyExecutionSince: keyText(t0)}, StateFullyActivated, true, true, true},
		}
		for i, c := range cases {
			e.exec(`DELETE FROM kandev_meta`)
			for k, v := range c.keys {
				e.exec(`INSERT INTO kandev_meta (key, value) VALUES (?, ?)`, k, v)
			}
			ran = false
			h, err := s.Health(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if h.State != c.state || h.Compared != c.compared || ran != c.compared || h.ExecutionIDsReliable != c.reliable || (h.Problem != "") != c.problem {
				t.Fatalf("case %d: %+v", i, h)
			}
			if i == 0 && (!h.NoPreCaptureCoverage || h.BackfillThrough != nil || !h.CaptureSince.Equal(t0)) {
				t.Fatalf("contract fields %+v", h)
			}
		}
	})
}

// S60 [.42]
func TestHealthAgree(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		s := healthEnv(t, e, t0)
		at := t0.Add(time.Second)
		for i := range 3 {
			tc := fmt.Sprint("tc", i)
			e.msg("m"+tc, tc, at)
			s.Record(e.ctx, frame(tc, func(f *Frame) { f.ObservedAt = at }))
		}
		e.message(message{ID: "no-task", Session: "S", Task: "", Metadata: subagentMeta("tc9", "", nil), Created: at})
		h, err := s.Health(e.ctx)
		if err != nil || h.Shortfall != 0 || h.Excess != 0 || !h.Healthy() || !h.MaxObserved.Equal(at) {
			t.Fatalf("%+v %v", h, err)
		}
	})
}

// S61 [.42, .45]: an excess never masks a shortfall.
func TestHealthNoMasking(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		s := healthEnv(t, e, t0)
		at := t0.Add(time.Second)
		e.row("orphan", "E", at)
		e.msg("mc", "collide", at)
		e.row("collide", "E1", at)
		e.row("collide", "E2", at)
		e.msg("md1", "dup", at)
		e.msg("md2", "dup", at.Add(time.Second))
		e.row("dup", "E", at)
		before, _ := s.Health(e.ctx)
		e.msg("mmiss", "missing", at.Add(time.Minute))
		h, err := s.Health(e.ctx)
		if err != nil || h.Shortfall != 1 || h.Excess != 1 || h.Collisions != 1 || !h.MaxObserved.Equal(*before.MaxObserved) || h.Healthy() {
			t.Fatalf("%+v %v", h, err)
		}
	})
}

// S62 [.37]: the boundary is exact to the microsecond whatever the text
// form (SQLite) or the session TimeZone (PostgreSQL).
func TestHealthBoundary(t *testing.T) {
	k := time.Date(2026, 8, 12, 10, 0, 0, 500000, time.UTC)
	for _, tz := range []string{"UTC", "Pacific/Kiritimati", "Pacific/Honolulu", "America/St_Johns"} {
		t.Run(tz, func(t *testing.T) {
			layouts(t, func(t *testing.T, e *env) {
				if e.kind == Postgres {
					e.dsn += "&timezone=" + tz
				}
				s := healthEnv(t, e, k)
				if e.kind == Postgres {
					var got string
					s.reader.QueryRow(`SHOW TimeZone`).Scan(&got)
					if got != tz {
						t.Fatalf("session TimeZone %q", got)
					}
				}
				before, at, after, west := any(k.Add(-time.Microsecond)), any(k), any(k.Add(10*time.Hour)), any(k.Add(time.Hour))
				if e.kind == SQLite {
					// trimmed, T/Z and offset text forms of the same instants;
					// "west" is written on the previous local date
					before, at, after = "2026-08-12 09:59:59.999999+00:00", "2026-08-12T10:00:00.0005Z", "2026-08-13T06:00:00.0005+10:00"
					west = "2026-08-11T21:00:00.0005-14:00"
				}
				e.msg("m-west", "west", west)
				e.row("r-west", "E", west)
				e.msg("m-before", "before", before)
				e.msg("m-at", "at", at)
				e.msg("m-after", "after", after)
				e.row("r-before", "E", before)
				e.row("r-at", "E", at)
				e.row("r-after", "E", after)
				h, err := s.Health(e.ctx)
				if err != nil || h.Shortfall != 3 || h.Excess != 3 || h.MaxObserved == nil || !h.MaxObserved.Equal(k.Add(10*time.Hour)) {
					t.Fatalf("%+v %v", h, err)
				}
			})
		})
	}
}

// S63 [.44]: both counts come from one snapshot.
func TestHealthSnapshot(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		s := healthEnv(t, e, t0)
		at := t0.Add(time.Second)
		e.msg("m1", "tc1", at)
		e.row("tc1", "E", at)
		s.hooks.betweenHealthQueries = func() {
			e.row("late-orphan", "E", at.Add(time.Hour))
			e.msg("m-late", "late-missing", at)
		}
		h, err := s.Health(e.ctx)
		if err != nil || h.Shortfall != 0 || h.Excess != 0 || !h.MaxObserved.Equal(at) {
			t.Fatalf("not one snapshot: %+v %v", h, err)
		}
		s.hooks.betweenHealthQueries = nil
		h, _ = s.Health(e.ctx)
		if h.Shortfall != 1 || h.Excess != 1 {
			t.Fatalf("after: %+v", h)
		}
	})
}

// S64 [.45]
func TestHealthWriterStopped(t *testing.T) {
	layouts(t, func(t *testing.T, e *env) {
		s := healthEnv(t, e, t0)
		t2 := t0.Add(time.Minute)
		for i, at := range []time.Time{t0.Add(time.Second), t2} {
			tc := fmt.Sprint("tc", i)
			e.msg("m"+tc, tc, at)
			s.Record(e.ctx, frame(tc, func(f *Frame) { f.ObservedAt = at }))
		}
		var last int64
		for i := range 3 {
			e.msg(fmt.Sprint("later", i), fmt.Sprint("later", i), t2.Add(time.Duration(i+1)*time.Minute))
			h, _ := s.Health(e.ctx)
			if h.Shortfall != last+1 || !h.MaxObserved.Equal(t2) {
				t.Fatalf("%+v", h)
			}
			last = h.Shortfall
		}
		// Only backfill rows from before since: MaxObserved is none.
		e.exec(`DELETE FROM task_session_subagents`)
		e.row("old", "unknown", t0.Add(-time.Hour))
		if h, _ := s.Health(e.ctx); h.MaxObserved != nil || h.Healthy() {
			t.Fatalf("%+v", h)
		}
	})
}

// S65 [.40, .41]: counters reconcile; failures never reach the caller.
// Not parallel: it also checks the process-global expvar deltas.
func TestCountersReconcile(t *testing.T) {
	for _, kind := range []Engine{SQLite, Postgres} {
		t.Run(string(kind), func(t *testing.T) {
			e := newEnv(t, kind)
			s := liveEnv(t, e)
			global := func(k string) int64 { return global().Get(k).(*expvar.Int).Value() }
			g0 := map[string]int64{}
			for _, k := range counterKeys {
				g0[k] = global(k)
			}
			const n, k, f, u = 12, 3, 2, 4
			for i := range n {
				fr := frame(fmt.Sprint("tc", i))
				switch {
				case i < k:
					fr.TaskID = ""
				case i < k+f:
					fr.TaskSessionID = "no-such-session" // the foreign key fails the write
				case i < k+f+u:
					fr.ExecutionID = ""
				}
				s.Record(e.ctx, fr)
			}
			c := s.Counters()
			want := Counters{Attempted: n, SkippedNoIdentity: k, Failed: f, Persisted: n - k - f, UnknownExecution: u}
			if c != want {
				t.Fatalf("counters %+v, want %+v", c, want)
			}
			if c.Attempted != c.SkippedNoIdentity+c.Persisted+c.Failed {
				t.Fatal("invariant broken")
			}
			for key, d := range map[string]int64{CounterAttempted: n, CounterSkippedNoIdentity: k, CounterFailed: f, CounterPersisted: n - k - f, CounterUnknownExecution: u} {
				if got := global(key) - g0[key]; got != d {
					t.Fatalf("expvar %s moved %d, want %d", key, got, d)
				}
			}
			logs := e.logs.String()
			if strings.Count(logs, "level=WARN msg=\"subagent context persist failed\" session_id=no-such-session") != f ||
				!strings.Contains(logs, "tool_call_id=tc3") {
				t.Fatalf("WARNs:\n%s", logs)
			}
		})
	}
}

// Record survives a panic, a cancelled caller context, nil receivers.
func TestRecordNeverFails(t *testing.T) {
	engines(t, func(t *testing.T, e *env) {
		s := liveEnv(t, e)
		var nilStore *Store
		nilStore.Record(e.ctx, frame("tc1"))
		s.Record(e.ctx, nil)
		if s.Counters() != (Counters{}) {
			t.Fatal("nil frame counted")
		}
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		s.Record(ctx, frame("tc1"))
		if c := s.Counters(); c.Persisted != 1 {
			t.Fatalf("cancelled caller context failed the write: %+v", c)
		}
		s.now = func() time.Time { panic("boom") }
		s.Record(e.ctx, frame("tc2", func(f *Frame) { f.ObservedAt = time.Time{} }))
		if c := s.Counters(); c.Failed != 1 || c.Attempted != 2 {
			t.Fatalf("panic not counted: %+v", c)
		}
		if !strings.Contains(e.logs.String(), "panic: boom") {
			t.Fatal("panic not logged")
		}
	})
}

// S66 [.40]
func TestExpvarPublication(t *testing.T) {
	v := expvar.Get(ExpvarName)
	if v == nil {
		t.Fatal("not published")
	}
	var m map[string]int64
	if err := json.Unmarshal([]byte(v.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range counterKeys {
		if _, ok := m[k]; !ok {
			t.Fatalf("key %s missing from %s", k, v)
		}
	}
	srv := httptest.NewServer(http.DefaultServeMux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if !strings.Contains(string(body), `"`+ExpvarName+`"`) || !strings.Contains(string(body), `"unknown_execution"`) {
		t.Fatalf("/debug/vars lacks the counters")
	}
}

// Health's two message sources count the same: the derived pair column of
// a standalone messages table (read from its index) and the metadata
// parsed on a host's table, over the randomised history of the parity
// test (every JSON type in tool_call_id and kind-bearing documents,
// truncated and non-object metadata, which must neither fail the insert
// into a table with the generated column nor abort health) plus rows that
// match, miss and collide. Identical on both engines too.
func TestHealthSourcesAgree(t *testing.T) {
	t.Parallel()
	history := randomHistory(400)
	var reports []string
	for _, host := range []bool{false, true} {
		for _, kind := range []Engine{SQLite, Postgres} {
			e := newEnv(t, kind)
			e.hostShape = host
			historyEnv(e)
			for i, m := range history {
				if i%3 == 0 {
					m.Session, m.Task = "S", ""
				}
				if i%7 == 0 {
					m.Metadata = strings.Replace(m.Metadata.(string), `"subagent_task"`, `"message"`, 1)
				}
				e.message(m)
			}
			s := e.store()
			if has, err := s.eng.hasColumn(e.ctx, e.raw, "task_session_messages", messagePairColumn); err != nil || has == host {
				t.Fatalf("host=%v: pair column present=%v %v", host, has, err)
			}
			e.exec(`DELETE FROM task_session_subagents WHERE tool_call_id IN ('tc3', 'tc5', 'tc8', 'tc13')`)
			for i := range 12 {
				e.row(fmt.Sprint("tc", 190+i%6), fmt.Sprint("E", i), t0.Add(time.Duration(10+i)*time.Second))
			}
			e.exec(`UPDATE kandev_meta SET value = ? WHERE key = ?`, keyText(t0.Add(10*time.Second)), KeyCaptureSince)
			h, err := s.Health(e.ctx)
			if err != nil || !h.Compared {
				t.Fatalf("%v %+v", err, h)
			}
			reports = append(reports, fmt.Sprintf("shortfall=%d excess=%d collisions=%d max=%v", h.Shortfall, h.Excess, h.Collisions, h.MaxObserved))
		}
	}
	t.Log(reports[0])
	for i, r := range reports {
		if r != reports[0] {
			t.Fatalf("report %d differs:\n%s", i, strings.Join(reports, "\n"))
		}
	}
	if !strings.Contains(reports[0], "shortfall=") || strings.HasPrefix(reports[0], "shortfall=0 excess=0") {
		t.Fatalf("the fixture lost its teeth: %s", reports[0])
	}
}
