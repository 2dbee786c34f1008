package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kdlbs/acp-go-sdk/internal/procguard"
	"github.com/kdlbs/acp-go-sdk/internal/proctest"
)

// TestMain opts into guard processes (so every turn and probe runs under a
// guard process, re-executing this binary), turns the test binary into the
// fake CLI when FakeEnv is set or into a host when hostEnv is set, and
// otherwise makes the test process a child subreaper so that the guard's
// reaping of orphaned descendants is exercised (and checked) too.
func TestMain(m *testing.M) {
	EnableGuardProcess()
	// The race runtime sleeps a second at exit by default: guards would too.
	if os.Getenv("GORACE") == "" {
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	if os.Getenv(fakeEnv) == "1" {
		os.Exit(fakeMain())
	}
	if os.Getenv(hostEnv) == "1" {
		os.Exit(hostMain())
	}
	if err := procguard.EnableChildSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "warning:", err)
	}
	code := m.Run()
	if sharedFake.dir != "" {
		os.RemoveAll(sharedFake.dir)
	}
	os.Exit(code)
}

// fakeBin writes an executable wrapper named name into dir that runs the
// fake CLI with the given extra environment, and returns its path.
func fakeBin(t testing.TB, dir, name string, env ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "export %s=1\n", fakeEnv)
	fmt.Fprintf(&b, "export %s\n", shellQuote(fakeRunMarker))
	// The race runtime sleeps a second at exit by default.
	b.WriteString("export GORACE=atexit_sleep_ms=0\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(self))
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fakeRunMarker is the environment entry every fake CLI this test process
// writes carries (and passes on to its descendants). It names this process
// alone: other test binaries running the same fakes at the same time (another
// package, another checkout) carry a different one, and their processes are
// not ours to judge or kill.
var fakeRunMarker = fmt.Sprintf("%s=%d-%d", fakeRunEnv, os.Getpid(), time.Now().UnixNano())

// checkNoLeftovers registers a cleanup asserting that no process the test
// started still runs: no live process carrying this test process's
// fakeRunMarker in its environment, and no unreaped zombie child of this
// process. Survivors are killed so one failure does not cascade.
func checkNoLeftovers(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		marker := []byte(fakeRunMarker)
		var left []string
		var live []int
		// Hang guard only: the runner already waited for every descendant.
		deadline := time.Now().Add(5 * time.Second)
		for {
			left, live = left[:0], live[:0]
			for _, pid := range listPids() {
				st, ok := proctest.ReadStat(pid)
				if !ok {
					continue
				}
				zombie := st.State == 'Z'
				if zombie && st.PPid == os.Getpid() {
					left = append(left, fmt.Sprintf("zombie child %d", pid))
					continue
				}
				if !zombie && pid != os.Getpid() && environContains(pid, marker) {
					left = append(left, fmt.Sprintf("live %d (ppid %d, pgid %d, state %c)", pid, st.PPid, st.PGid, st.State))
					live = append(live, pid)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("processes left behind: %v", left)
			for _, pid := range live {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			for _, pid := range listPids() {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			}
		}
	})
}

func listPids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func environContains(pid int, kv []byte) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if bytes.Equal(e, kv) {
			return true
		}
	}
	return false
}

// fastTimeouts keeps every timer short; outcomes, not durations, are
// asserted.
// Tests that need the idle timer to fire shorten it themselves (shortIdle).
var fastTimeouts = Timeouts{
	Startup:     10 * time.Second,
	IdleWarning: 1 * time.Second,
	Idle:        2 * time.Second,
	ToolSlack:   100 * time.Millisecond,
	WallClock:   20 * time.Second,
	Grace:       300 * time.Millisecond,
	TermGrace:   200 * time.Millisecond,
}

// shortIdle makes the idle timer fire quickly.
func (f *turnFixture) shortIdle() {
	f.runner.Timeouts.IdleWarning = 150 * time.Millisecond
	f.runner.Timeouts.Idle = 400 * time.Millisecond
}

// testCtx bounds a test's own waiting (a hang guard, not an assertion).
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// admit discovers the fake through CURSOR_BIN.
func admit(t *testing.T, bin string) *Executable {
	t.Helper()
	d := &Discoverer{Getenv: func(k string) string {
		if k == SourceEnv {
			return bin
		}
		return ""
	}, ProbeTimeout: 10 * time.Second}
	disc := d.Discover(testCtx(t))
	if disc.Selected == nil {
		t.Fatalf("fake not admitted: %+v", disc.Candidates)
	}
	return disc.Selected
}

// turnFixture runs one scripted turn against a fresh fake.
type turnFixture struct {
	t          *testing.T
	runner     *Runner
	events     []Event
	ids        []string
	record     string
	scriptFile string
}

// sharedFake is one admitted fake used by most turn tests (scripts differ
// per test through the runner's environment), so each test does not pay
// for a probe.
var sharedFake struct {
	once sync.Once
	dir  string
	exe  *Executable
	err  error
}

func sharedExecutable(t *testing.T) *Executable {
	t.Helper()
	sharedFake.once.Do(func() {
		dir, err := os.MkdirTemp("", "cursorfake")
		if err != nil {
			sharedFake.err = err
			return
		}
		sharedFake.dir = dir
		bin := fakeBin(t, dir, "cursor-agent")
		d := &Discoverer{Getenv: func(k string) string {
			if k == SourceEnv {
				return bin
			}
			return ""
		}}
		if disc := d.Discover(context.Background()); disc.Selected != nil {
			sharedFake.exe = disc.Selected
		} else {
			sharedFake.err = fmt.Errorf("shared fake not admitted: %+v", disc.Candidates)
		}
	})
	if sharedFake.err != nil {
		t.Fatal(sharedFake.err)
	}
	return sharedFake.exe
}

func newFixture(t *testing.T, script ...string) *turnFixture {
	return newFixtureWith(t, sharedExecutable(t), script...)
}

// newFixtureOwnBin admits a fake of the test's own (for tests that alter
// the executable).
func newFixtureOwnBin(t *testing.T, script ...string) *turnFixture {
	return newFixtureWith(t, admit(t, fakeBin(t, t.TempDir(), "cursor-agent")), script...)
}

func newFixtureWith(t *testing.T, exe *Executable, script ...string) *turnFixture {
	t.Helper()
	checkNoLeftovers(t)
	dir := t.TempDir()
	f := &turnFixture{t: t, record: filepath.Join(dir, "record.json"), scriptFile: filepath.Join(dir, "script")}
	f.runner = &Runner{
		Executable: exe,
		Timeouts:   fastTimeouts,
		Guard:      procguard.Options{ScanInterval: 20 * time.Millisecond},
		Env: []string{
			fakeScriptEnv + "_FILE=" + f.scriptFile,
			fakeRecordEnv + "=" + f.record,
		},
	}
	f.setScript(script...)
	return f
}

// setScript replaces the fake's turn script.
func (f *turnFixture) setScript(steps ...string) {
	if err := os.WriteFile(f.scriptFile, []byte(strings.Join(steps, "\n")), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *turnFixture) turn(st SessionState, prompt string) Turn {
	return Turn{
		Plan:        st.PlanTurn(Instructions{SystemPrompt: "You are terse."}, prompt),
		Dir:         f.t.TempDir(),
		OnEvent:     func(e Event) { f.events = append(f.events, e) },
		OnSessionID: func(id string) { f.ids = append(f.ids, id) },
	}
}

func (f *turnFixture) run(st SessionState, prompt string) Result {
	f.t.Helper()
	res, err := f.runner.Run(testCtx(f.t), f.turn(st, prompt))
	if err != nil {
		f.t.Fatalf("Run refused: %v", err)
	}
	return res
}

func (f *turnFixture) kinds() []EventKind {
	var out []EventKind
	for _, e := range f.events {
		out = append(out, e.Kind)
	}
	return out
}

// assertFailure checks the common projection of every failure.
func assertFailure(t *testing.T, res Result, class Class) {
	t.Helper()
	if res.Class != class {
		t.Fatalf("class = %q (detail %q, stderr %q), want %q", res.Class, res.Detail, res.StderrTail, class)
	}
	if !res.IsError || res.FinalText != "" || res.Success() {
		t.Fatalf("failure not projected as empty final + is_error: %+v", res)
	}
}

const sid = "0b7e52d4-1c1e-4c57-9a55-3f0c2a9d7e10"

// Canned stream-json lines (synthetic ids and values).
var (
	lineInit       = `{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/srv/ws/demo","session_id":"` + sid + `","model":"Auto","permissionMode":"default"}`
	lineEcho       = `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"ECHOED-ENVELOPE"}]},"session_id":"` + sid + `"}`
	lineThinking   = `{"type":"thinking","subtype":"delta","text":"Checking main.go","session_id":"` + sid + `","timestamp_ms":1787000000000}`
	lineThinkDone  = `{"type":"thinking","subtype":"completed","session_id":"` + sid + `","timestamp_ms":1787000000400}`
	lineReadStart  = `{"type":"tool_call","subtype":"started","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"}}},"session_id":"` + sid + `"}`
	lineReadDone   = `{"type":"tool_call","subtype":"completed","call_id":"call-1","tool_call":{"readToolCall":{"args":{"path":"main.go"},"result":{"success":{"content":"package main\n","isEmpty":false,"exceededLimit":false,"totalLines":40,"totalChars":812}}}},"session_id":"` + sid + `"}`
	lineAssistant  = `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"main.go prints a greeting."}]},"session_id":"` + sid + `"}`
	lineResultOK   = `{"type":"result","subtype":"success","is_error":false,"duration_ms":4889,"duration_api_ms":4702,"result":"main.go prints a greeting.","session_id":"` + sid + `","request_id":"req-1","usage":{"inputTokens":14948,"outputTokens":103,"cacheReadTokens":0,"cacheWriteTokens":0}}`
	lineResultErr  = `{"type":"result","subtype":"error","is_error":true,"duration_ms":10,"result":"","session_id":"` + sid + `"}`
	lineShellRej   = `{"type":"tool_call","subtype":"completed","call_id":"call-2","tool_call":{"shellToolCall":{"result":{"rejected":{"command":"go test ./...","workingDirectory":"/srv/ws/demo","reason":"","isReadonly":false}}}},"session_id":"` + sid + `"}`
	lineShellStart = `{"type":"tool_call","subtype":"started","call_id":"call-2","tool_call":{"shellToolCall":{"args":{"command":"go test ./...","workingDirectory":"/srv/ws/demo","timeout":1500,"isBackground":false}}},"session_id":"` + sid + `"}`
)
