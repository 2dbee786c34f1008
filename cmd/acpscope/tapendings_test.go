package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tap never costs the editor its agent: a --web address another
// window already serves, a database that cannot be reached, a database
// directory or a --record directory that is missing, a --log that cannot
// be opened. Each time the agent starts and the editor's turn goes through
// the tap (run's cards are the same as without it), the failure is said on
// standard error and in --log, and the closing report names what the
// observation went without. (Before, the tap exited 2 before it started
// the agent: run's initialize failed.)
func TestTapStartsTheAgentWhateverFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0") // the other window's tap
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		name string
		// flags are the tap's flags for a test directory; log reports
		// whether they include --log (at log.txt in that directory).
		flags func(dir string) []string
		log   bool
		// says is in the failure's message; without in the closing
		// report; stored, that the store worked and holds run's rows.
		says, without string
		stored        bool
	}{
		{"web address in use", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "tap.db"), "--web", taken.Addr().String()}
		}, true, "--web: listen tcp " + taken.Addr().String(), "no web pages (--web: listen tcp", true},
		{"database unreachable", func(string) []string {
			return []string{"--db", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"}
		}, true, "connection refused", "no store (database", false},
		{"database directory missing", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "missing", "tap.db")}
		}, true, "does not exist", "no store (database: the directory", false},
		{"web with a store that cannot open", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "missing", "tap.db"), "--web", "127.0.0.1:0"}
		}, true, "does not exist", "no web pages (--web: not served: the store did not open)", false},
		{"record directory missing", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "tap.db"), "--record", filepath.Join(dir, "missing", "tap.jsonl")}
		}, true, "--record: open", "no capture (--record: open", true},
		{"log directory missing", func(dir string) []string {
			return []string{"--db", filepath.Join(dir, "tap.db"), "--log", filepath.Join(dir, "missing", "tap.log")}
		}, false, "--log: open", "no log (--log: open", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			runDB := filepath.Join(dir, "run.db")
			flags := c.flags(dir)
			if c.log {
				flags = append(flags, "--log", filepath.Join(dir, "log.txt"))
			}
			direct := []string{"run", "--json", "--permission", "allow", "--prompt", "go", "--no-db", "--", fakeAgent}
			code, want, errOut := acpscope(t, "", direct...)
			if code != exitOK {
				t.Fatalf("run without the tap: exit %d: %s", code, errOut)
			}
			args := append([]string{"run", "--json", "--permission", "allow", "--prompt", "go", "--db", runDB, "--", acpscopeBin, "tap"}, flags...)
			code, got, errOut := acpscope(t, "", append(args, "--", fakeAgent)...)
			if code != exitOK || got != want || want == "" {
				t.Fatalf("run through the tap: exit %d, cards\n%s\nwant exit 0 and\n%s\nstderr:\n%s", code, got, want, errOut)
			}
			if !strings.Contains(errOut, c.says) {
				t.Errorf("standard error does not say %q:\n%s", c.says, errOut)
			}
			report := errOut
			if c.log {
				data, err := os.ReadFile(filepath.Join(dir, "log.txt"))
				if err != nil {
					t.Fatal(err)
				}
				if report = string(data); !strings.Contains(report, c.says) {
					t.Errorf("the log does not say %q:\n%s", c.says, report)
				}
			}
			line := regexp.MustCompile(`(?m)^acpscope tap: passed .*$`).FindString(report)
			if !strings.Contains(line, "; incomplete: ") || !strings.Contains(line, c.without) {
				t.Errorf("the closing report does not name %q:\n%s", c.without, report)
			}
			if c.stored {
				if want, got := storedCards(t, runDB, "fake-session"), storedCards(t, filepath.Join(dir, "tap.db"), "fake-session"); want != got || want == "" {
					t.Errorf("the tap stored other rows than run:\n--- run\n%s--- tap\n%s", want, got)
				}
			}
		})
	}
}

// A part of the tap that did not start is the tap's own failure: once the
// agent has run (it leaves a file), the tap exits 2 as before, now after
// the session and not instead of it.
func TestTapPartThatDidNotStartExitsTwoAfterTheAgent(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	var stderr lockedBuffer
	code := run(context.Background(), []string{"tap", "--db", filepath.Join(dir, "missing", "tap.db"), "--",
		"sh", "-c", "cat >/dev/null; touch " + ran}, strings.NewReader(""), io.Discard, &stderr)
	if code != exitUsage {
		t.Errorf("exit %d, want %d:\n%s", code, exitUsage, stderr.Bytes())
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the agent did not run: %v\n%s", err, stderr.Bytes())
	}
}

// The tap exits as its agent did: the agent's exit code, or 128 + the
// signal that killed it, whichever side ended first; an agent the tap had
// to stop after --grace says so, with the status that stop gave it.
// (Before, every one of these exited 0 without a word.)
func TestTapExitsAsTheAgentDid(t *testing.T) {
	for _, c := range []struct {
		name, script string
		grace        string
		want         int
		says         string
	}{
		{"SIGSEGV", "ulimit -c 0; kill -SEGV $$", "1h", 128 + int(syscall.SIGSEGV), "the agent was killed by signal 11 (segmentation fault)"},
		{"SIGABRT", "ulimit -c 0; kill -ABRT $$", "1h", 128 + int(syscall.SIGABRT), "the agent was killed by signal 6 (aborted)"},
		{"SIGKILL", "kill -KILL $$", "1h", 128 + int(syscall.SIGKILL), "the agent was killed by signal 9 (killed)"},
		{"exit 5 after the input ended", "cat >/dev/null; exit 5", "1h", 5, "the agent exited with code 5"},
		{"exit 0 after the input ended", "cat >/dev/null", "1h", exitOK, ""},
		{"stopped after --grace", "cat >/dev/null; exec sleep 600", "100ms", 128 + int(syscall.SIGTERM),
			"the agent did not exit within --grace 100ms of the end of its input; the tap stopped it: it was killed by signal 15 (terminated)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "tap.log")
			var stderr lockedBuffer
			code := run(context.Background(), []string{"tap", "--no-db", "--grace", c.grace, "--log", log, "--", "sh", "-c", c.script},
				strings.NewReader(""), io.Discard, &stderr)
			if code != c.want {
				t.Errorf("exit %d, want %d:\n%s", code, c.want, stderr.Bytes())
			}
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			for where, text := range map[string]string{"standard error": string(stderr.Bytes()), "the log": string(data)} {
				if c.says == "" && regexp.MustCompile(`the agent (exited|was|did)`).MatchString(text) {
					t.Errorf("%s reports an ending for an agent that went well:\n%s", where, text)
				}
				if !strings.Contains(text, c.says) {
					t.Errorf("%s does not say %q:\n%s", where, c.says, text)
				}
			}
		})
	}
}

// A stop signal from the editor ends the tap with 128 + that signal, as a
// shell reports it, whatever status the agent the tap then stopped had
// (this one ignores SIGHUP and SIGTERM: the guard kills it, 137).
// (Before, the tap exited 0.)
func TestTapStopSignalExitsWithTheEditorsSignal(t *testing.T) {
	dir := t.TempDir()
	termed := filepath.Join(dir, "termed")
	cmd := exec.Command(acpscopeBin, "tap", "--no-db", "--", fakeAgent, "-linger", "-termed", termed)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = outW, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	defer cmd.Process.Kill()
	defer stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	newRawEditor(t, stdin, outR).openAndPrompt()
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
	case <-time.After(hangGuard):
		t.Fatal("the tap did not end after SIGHUP")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGHUP) {
		t.Errorf("the tap ended with %v, want exit status %d:\n%s", err, 128+int(syscall.SIGHUP), stderr.Bytes())
	}
	if !strings.Contains(string(stderr.Bytes()), "ended by signal 1 (hangup)") {
		t.Errorf("standard error does not say the editor's signal ended the tap:\n%s", stderr.Bytes())
	}
}

// agentBytesPassed reads the closing report's count of the agent's bytes.
func agentBytesPassed(t *testing.T, report string) int64 {
	t.Helper()
	m := regexp.MustCompile(`acpscope tap: passed \d+ bytes from the editor and (\d+) from the agent`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no closing report:\n%s", report)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// When the editor stops reading (it closes the read end of the tap's
// standard output, its input still open), the agent's writes fail as they
// would without the tap: an agent that takes SIGPIPE dies of it (the tap
// exits 141 as the agent did), one that ignores it gets EPIPE and ends as
// it chooses (here exit 7). The tap stops reading the agent, and reports
// only the bytes it could write as passed. (Before, the tap read all
// 8 MiB, threw them away, counted them as passed, and exited 141 for
// both.)
func TestTapPassesAClosedOutputOn(t *testing.T) {
	const total = 8 << 20
	const read = 64 << 10
	for _, c := range []struct {
		name, script string
		want         int
	}{
		{"SIGPIPE", fmt.Sprintf("exec head -c %d /dev/zero", total), 128 + int(syscall.SIGPIPE)},
		{"EPIPE", fmt.Sprintf("trap '' PIPE; head -c %d /dev/zero 2>/dev/null || exit 7", total), 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(acpscopeBin, "tap", "--no-db", "--grace", "1h", "--", "sh", "-c", c.script)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close() // the editor keeps its side open: only its reading ends
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr lockedBuffer
			cmd.Stdout, cmd.Stderr = outW, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			outW.Close()
			defer cmd.Process.Kill()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if _, err := io.ReadFull(outR, make([]byte, read)); err != nil {
				t.Fatal(err)
			}
			outR.Close()
			select {
			case err = <-exited:
			case <-time.After(hangGuard):
				t.Fatal("the tap did not end after the editor stopped reading")
			}
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if code != c.want {
				t.Errorf("exit %d (%v), want %d:\n%s", code, err, c.want, stderr.Bytes())
			}
			// What the tap wrote is what the editor read plus at most
			// what a pipe holds (64 KiB by default, 1 MiB at most).
			if n := agentBytesPassed(t, string(stderr.Bytes())); n > read+1<<20 {
				t.Errorf("the tap reports %d bytes of the agent's passed; the editor read %d and stopped", n, read)
			}
		})
	}
}
