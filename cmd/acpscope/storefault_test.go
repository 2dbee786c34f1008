package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/faultproxy"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// proxiedPostgres is a fresh schema of the test server reached through a
// fault-injecting loopback proxy: the DSN through the proxy, the proxy,
// and a direct handle for checking what was stored.
func proxiedPostgres(t *testing.T) (string, *faultproxy.Proxy, *sql.DB) {
	t.Helper()
	direct := postgresDSN(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	db, err := sql.Open("pgx", direct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u.Host = p.Addr()
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	return u.String(), p, db
}

// waitFile waits until path exists (the fake agent's -ready).
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

// A PostgreSQL that stops answering mid-turn (the proxy stalls) never
// holds the turn past its cancellation: --timeout and a signal (the
// context main cancels on SIGINT or SIGTERM) end the run within
// --cancel-grace plus a few seconds, the cancelled exit code, and the
// card that could not be stored is named on standard error.
func TestRunHungPostgresEndsInTime(t *testing.T) {
	for _, how := range []string{"timeout", "signal"} {
		t.Run(how, func(t *testing.T) {
			dsn, proxy, _ := proxiedPostgres(t)
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			timeout := "3s"
			if how == "signal" {
				timeout = "10m"
			}
			go func() {
				waitFile(t, ready)
				proxy.Set(faultproxy.Stall)
				if how == "signal" {
					time.Sleep(200 * time.Millisecond)
					cancel()
				}
			}()
			start := time.Now()
			code, _, errOut := runGuarded(t, ctx, "run", "--json", "--db", dsn, "--prompt", "x", "--cwd", dir,
				"--timeout", timeout, "--cancel-grace", "1s", "--", fakeAgent, "-mode", "cancel", "-ready", ready)
			elapsed := time.Since(start)
			if code != exitCancelled {
				t.Fatalf("exit %d, want %d: %s", code, exitCancelled, errOut)
			}
			// 3 s of turn, 1 s of grace, a few seconds of slack; a write
			// waiting out its 10 s timeout would pass it.
			if elapsed > 9*time.Second {
				t.Fatalf("the run took %v with the store hung", elapsed)
			}
			t.Logf("the run ended after %v (--timeout %s, --cancel-grace 1s)", elapsed, timeout)
			if !strings.Contains(errOut, "not stored") {
				t.Fatalf("standard error does not name the cards not stored: %s", errOut)
			}
			proxy.Set(faultproxy.Forward)
		})
	}
}

// A PostgreSQL outage during a turn of 200 cards: with the server back
// within the flush window every card is stored (the writer retried) and
// the run succeeds; with it gone for good the run says how many cards were
// not stored and why, in one line, and exits 4. Warnings are throttled.
func TestRunPostgresOutage(t *testing.T) {
	for _, back := range []bool{true, false} {
		t.Run(fmt.Sprint("back=", back), func(t *testing.T) {
			dsn, proxy, db := proxiedPostgres(t)
			dir := t.TempDir()
			ready, start := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
			go func() {
				waitFile(t, ready)
				proxy.Set(faultproxy.Cut)
				_ = os.WriteFile(start, nil, 0o644)
				if back {
					time.Sleep(time.Second)
					proxy.Set(faultproxy.Forward)
				}
			}()
			code, out, errOut := runGuarded(t, context.Background(), "run", "--json", "--db", dsn, "--prompt", "x", "--cwd", dir,
				"--timeout", "5s", "--cancel-grace", "1s", "--", fakeAgent, "-mode", "burst", "-updates", "2000", "-per", "10",
				"-ready", ready, "-go", start)
			if n := strings.Count(out, "\n"); n != 200 {
				t.Fatalf("%d cards in --json, want 200", n)
			}
			var rows int
			if err := db.QueryRow(`SELECT COUNT(*) FROM task_session_subagents WHERE settled_at IS NOT NULL`).Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if warns := strings.Count(errOut, "level=WARN"); warns > 3 {
				t.Fatalf("%d warnings: not throttled\n%s", warns, errOut)
			}
			if back {
				if code != exitOK || rows != 200 {
					t.Fatalf("exit %d, %d settled rows, want 0 and 200: %s", code, rows, errOut)
				}
				return
			}
			line := regexp.MustCompile(`stored ([0-9,]+) of 200 subagent cards; ([0-9,]+) not stored: \S`).FindStringSubmatch(errOut)
			if code != exitNotStored || line == nil {
				t.Fatalf("exit %d, want %d and the accounting line: %s", code, exitNotStored, errOut)
			}
			if line[1] != fmt.Sprint(rows) && rows != 0 {
				t.Fatalf("the line says %s stored, the database holds %d settled rows", line[1], rows)
			}
		})
	}
}

// A migration that refuses (task_session_subagents is a host's own table)
// stops run before the agent starts, exit 2, with migrate's message.
func TestRunRefusedMigrationStartsNoAgent(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "host.db")
	raw, err := sql.Open("sqlite3", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE VIEW task_session_subagents AS SELECT 1 AS id`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	mcode, _, migrateErr := acpscope(t, "", "migrate", "--db", db)
	if mcode != exitTurn {
		t.Fatalf("migrate exit %d: %s", mcode, migrateErr)
	}
	ready := filepath.Join(dir, "ready")
	code, _, errOut := acpscope(t, "", "run", "--db", db, "--prompt", "x", "--cwd", dir, "--timeout", "5s",
		"--", fakeAgent, "-mode", "cancel", "-ready", ready)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d: %s", code, exitUsage, errOut)
	}
	if _, err := os.Stat(ready); err == nil {
		t.Fatal("the agent was started")
	}
	if want := strings.Replace(migrateErr, "agent or turn failure: ", "", 1); errOut != want {
		t.Fatalf("run says\n%s\nmigrate says\n%s", errOut, migrateErr)
	}
}

// idsCapture is a Claude session whose id holds a NUL and whose two cards'
// ids differ only by NUL against U+FFFD: two cards, with their own
// descriptions and statuses.
const idsCapture = `{"capture":{"version":1,"agent":"claude"}}
{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"1"},"authMethods":[]}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s\u0000x"}}}
{"from":"client","msg":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s\u0000x","prompt":[{"type":"text","text":"go"}]}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0000x","update":{"_meta":{"claudeCode":{"toolName":"Agent"}},"kind":"think","rawInput":{"description":"first","prompt":"p1","subagent_type":"general-purpose"},"sessionUpdate":"tool_call","status":"pending","title":"first","toolCallId":"tc\u0000"}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0000x","update":{"_meta":{"claudeCode":{"toolName":"Agent"}},"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"tc\u0000"}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\u0000x","update":{"_meta":{"claudeCode":{"toolName":"Agent"}},"kind":"think","rawInput":{"description":"second","prompt":"p2","subagent_type":"general-purpose"},"sessionUpdate":"tool_call","status":"pending","title":"second","toolCallId":"tc\ufffd"}}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}}
`

// Ids are exact from the wire to the store: a NUL session id keeps its
// cards, and tool call ids "tc\u0000" and "tc\ufffd" are two cards in
// --json and two rows, each with its own description and status, on both
// engines.
func TestIdsExactFromWireToStore(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "ids.db")
			if kind == "postgres" {
				db = postgresDSN(t)
			}
			capture := filepath.Join(dir, "ids.jsonl")
			if err := os.WriteFile(capture, []byte(idsCapture), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := acpscope(t, "", "replay", "--json", "--db", db, capture)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			cards := parseCards(t, out)
			if len(cards) != 2 || *cards[0].ToolCallID == *cards[1].ToolCallID {
				t.Fatalf("want two cards, got:\n%s", out)
			}
			s, err := persistence.OpenReadOnly(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rows, err := s.ListBySession(context.Background(), "s\x00x")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range rows {
				got[r.ToolCallID] = *r.Description + "/" + *r.ToolStatus
			}
			// The second card, still pending when the connection ended,
			// ends unknown (Tracker.EndConnection).
			want := map[string]string{"tc\x00": "first/complete", "tc\ufffd": "second/unknown"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("stored %q, want %q", got, want)
			}
		})
	}
}

// Four acpscope processes write 5,000 cards each to one PostgreSQL at
// once, through a proxy that cuts and stalls the connections while the
// turns run. After the faults end every card is stored exactly once (one
// row per process and card, none twice) and none regressed (every row
// settled complete), and every run succeeds.
func TestManyWritersOnePostgresThroughFaults(t *testing.T) {
	const procs, cards = 4, 5000
	dsn, proxy, db := proxiedPostgres(t)
	dir := t.TempDir()
	start := filepath.Join(dir, "go")
	type result struct {
		code   int
		stderr string
	}
	results := make(chan result, procs)
	var readies []string
	for i := range procs {
		ready := filepath.Join(dir, fmt.Sprint("ready", i))
		readies = append(readies, ready)
		cmd := exec.Command(acpscopeBin, "run", "--plain", "--db", dsn, "--prompt", "x", "--cwd", dir,
			"--timeout", "90s", "--cancel-grace", "1s", "--",
			fakeAgent, "-mode", "burst", "-updates", fmt.Sprint(2*cards), "-per", "2", "-ready", ready, "-go", start)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := cmd.Wait()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results <- result{code, errOut.String()}
		}()
	}
	for _, r := range readies {
		for deadline := time.Now().Add(hangGuard); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(r); err == nil {
				break
			}
			select {
			case res := <-results:
				t.Fatalf("a run ended before its turn started: exit %d: %s", res.code, res.stderr)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never appeared", r)
			}
		}
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fault := range []struct {
		mode faultproxy.Mode
		d    time.Duration
	}{
		{faultproxy.Forward, 300 * time.Millisecond}, {faultproxy.Cut, 400 * time.Millisecond},
		{faultproxy.Forward, 300 * time.Millisecond}, {faultproxy.Stall, 700 * time.Millisecond},
		{faultproxy.Forward, 200 * time.Millisecond}, {faultproxy.Cut, 300 * time.Millisecond},
		{faultproxy.Forward, 200 * time.Millisecond}, {faultproxy.Stall, 400 * time.Millisecond},
	} {
		proxy.Set(fault.mode)
		time.Sleep(fault.d)
	}
	proxy.Set(faultproxy.Forward)
	retried := 0
	for range procs {
		select {
		case r := <-results:
			if r.code != exitOK {
				t.Errorf("a run exited %d: %s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "retrying") {
				retried++
			}
		case <-time.After(hangGuard):
			t.Fatal("a run did not end")
		}
	}
	t.Logf("%d of %d runs met a fault and retried", retried, procs)
	rows, err := db.Query(`SELECT agent_execution_id, COUNT(*), COUNT(DISTINCT tool_call_id),
	SUM(CASE WHEN tool_status = 'complete' AND settled_at IS NOT NULL THEN 1 ELSE 0 END)
FROM task_session_subagents GROUP BY agent_execution_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	executions := 0
	for rows.Next() {
		var exec string
		var n, distinct, settled int
		if err := rows.Scan(&exec, &n, &distinct, &settled); err != nil {
			t.Fatal(err)
		}
		executions++
		if n != cards || distinct != cards || settled != cards {
			t.Errorf("execution %s: %d rows, %d distinct cards, %d settled complete; want %d of each", exec, n, distinct, settled, cards)
		}
	}
	if err := rows.Err(); err != nil || executions != procs {
		t.Fatalf("%d executions stored, want %d (%v)", executions, procs, err)
	}
}

// A SQLite database whose file cannot grow (a file-size limit, as a full
// disk) during a 4,000-card turn: the run says how many cards were not
// stored and exits 4, and `acpscope health` then is not healthy, naming
// the run that did not confirm its cards.
func TestRunFullDiskThenHealth(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "full.db")
	if code, _, errOut := acpscope(t, "", "migrate", "--db", db); code != exitOK {
		t.Fatalf("migrate exit %d: %s", code, errOut)
	}
	st, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prlimit, fmt.Sprintf("--fsize=%d", st.Size()+64<<10), acpscopeBin, "run", "--plain", "--db", db,
		"--prompt", "x", "--cwd", dir, "--timeout", "6s", "--", fakeAgent, "-mode", "burst", "-updates", "8000", "-per", "2")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitNotStored || !regexp.MustCompile(`stored [0-9,]+ of 4,000 subagent cards; [0-9,]+ not stored: \S`).MatchString(errOut.String()) {
		t.Fatalf("run: %v, want exit %d and the accounting line: %s", err, exitNotStored, errOut.String())
	}
	code, out, herr := acpscope(t, "", "health", "--db", db)
	if code != exitTurn || !strings.Contains(out, "UNHEALTHY") || !strings.Contains(out, "writer:") {
		t.Fatalf("health exit %d after lost writes:\n%s%s", code, out, herr)
	}
}

// `acpscope health` answers from incremental health when the store keeps
// its state, and otherwise reads everything and says so (it opens
// read-only, so it cannot build the state itself).
func TestHealthUsesIncrementalState(t *testing.T) {
	db := filepath.Join(t.TempDir(), "health.db")
	if code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", db); code != exitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	code, out, errOut := acpscope(t, "", "health", "--db", db)
	if code != exitOK || !strings.Contains(out, "method:            full scan") {
		t.Fatalf("health exit %d without incremental state:\n%s%s", code, out, errOut)
	}
	s, err := persistence.Open(context.Background(), db, persistence.WithIncrementalHealth(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RebuildHealth(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, out, errOut = acpscope(t, "", "health", "--db", db)
	if code != exitOK || !strings.Contains(out, "method:            incremental") || !strings.Contains(out, "status:            healthy") {
		t.Fatalf("health exit %d with incremental state:\n%s%s", code, out, errOut)
	}
}
