package persistence

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// randomHistory is a deterministic mix of well-formed, odd and malformed
// subagent messages: every JSON type in every field, duplicate pairs,
// broken documents.
func randomHistory(n int) []message {
	rng := rand.New(rand.NewPCG(7, 11))
	values := []string{`""`, `"x"`, `"{x"`, `"[y"`, `0`, `-5`, `1`, `1.5`, `1e3`, `1.0`, `1e20`,
		`9223372036854775807`, `9223372036854775808`, `true`, `false`, `null`, `{}`, `[1]`, `"true"`, `"1"`}
	statuses := []string{`"complete"`, `"completed"`, `"failed"`, `"in_progress"`, `"Completed"`, `""`, `7`, `null`}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	var out []message
	for i := range n {
		var fields []string
		for _, f := range []string{"description", "subagent_type", "status", "agent_id", "child_session_id", "model",
			"is_async", "total_tokens", "tool_use_count", "duration_ms"} {
			if rng.IntN(3) > 0 {
				fields = append(fields, fmt.Sprintf(`"%s":%s`, f, pick(values)))
			}
		}
		tc := fmt.Sprintf(`"tc%d"`, rng.IntN(n/2)) // duplicate pairs on purpose
		if rng.IntN(10) == 0 {
			tc = pick(values)
		}
		md := fmt.Sprintf(`{"tool_call_id":%s,"status":%s,"parent_tool_call_id":%s,"normalized":{"kind":"subagent_task","subagent_task":{%s}}}`,
			tc, pick(statuses), pick(values), strings.Join(fields, ","))
		switch rng.IntN(12) {
		case 0:
			md = md[:rng.IntN(len(md))] // truncated
		case 1:
			md = pick([]string{"", "null", "[1]", "abc"})
		}
		created := t0.Add(time.Duration(rng.IntN(50)) * time.Second)
		out = append(out, message{ID: fmt.Sprintf("m%03d", i), Session: "S", Task: "T", Metadata: md,
			Created: created, Updated: created.Add(time.Duration(rng.IntN(5)) * time.Second)})
	}
	return out
}

// The same history backfills to identical rows on both engines.
func TestBackfillCrossEngineParity(t *testing.T) {
	t.Parallel()
	history := randomHistory(400)
	var dumps [][]string
	for _, kind := range []Engine{SQLite, Postgres} {
		e := newEnv(t, kind)
		historyEnv(e)
		for _, m := range history {
			e.message(m)
		}
		s := e.open(hooks{})
		if rep := s.Migrate(e.ctx); !rep.OK() {
			t.Fatalf("%s: %+v", kind, rep)
		}
		rows, err := s.ListBySession(e.ctx, "S")
		if err != nil {
			t.Fatal(err)
		}
		var dump []string
		for _, r := range rows {
			dump = append(dump, mustJSON(r))
		}
		slices.Sort(dump)
		dumps = append(dumps, dump)
	}
	if len(dumps[0]) < 100 {
		t.Fatalf("only %d rows derived; the generator lost its teeth", len(dumps[0]))
	}
	for i := range max(len(dumps[0]), len(dumps[1])) {
		var a, b string
		if i < len(dumps[0]) {
			a = dumps[0][i]
		}
		if i < len(dumps[1]) {
			b = dumps[1][i]
		}
		if a != b {
			t.Fatalf("engines differ (%d vs %d rows) at %d:\nsqlite   %s\npostgres %s", len(dumps[0]), len(dumps[1]), i, a, b)
		}
	}
}
