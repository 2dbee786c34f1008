package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A prompt on standard input over the limit is refused, not cut.
func TestPromptOverTheLimitIsAnError(t *testing.T) {
	big := strings.Repeat("x", 16<<20+10)
	code, _, errOut := acpscope(t, big, "run", "--no-db", "--plain", "--cwd", t.TempDir(), "--", fakeAgent)
	if code != exitUsage || !strings.Contains(errOut, "larger than") {
		t.Fatalf("exit %d, stderr %q; want exit 2 saying the prompt is too large", code, errOut)
	}
}

// An empty capture (or one with only a header) is an input error, not an
// empty successful turn; so is a capture whose recorded initialize result
// has the wrong types.
func TestReplayRejectsEmptyAndMistypedCaptures(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"empty.jsonl":       "",
		"header-only.jsonl": `{"capture":{"version":1,"agent":"claude"}}` + "\n",
		"mistyped.jsonl": `{"from":"client","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}
{"from":"agent","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"one","agentCapabilities":[]}}}
`,
	}
	for name, data := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := acpscope(t, "", "replay", "--no-db", "--plain", p)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want 2: %s", name, code, errOut)
		}
	}
}

// --record to a device that fails every write (/dev/full) fails the run
// with a message naming the recording, instead of exiting 0 with nothing
// written.
func TestRecordWriteErrorsFailTheRun(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	code, _, errOut := acpscope(t, "", "run", "--no-db", "--plain", "--prompt", "x", "--cwd", t.TempDir(), "--record", "/dev/full", "--", fakeAgent)
	if code == exitOK || !strings.Contains(errOut, "--record") {
		t.Fatalf("exit %d, stderr %q; want a failure naming --record", code, errOut)
	}
}

// A relative agent command is found from where acpscope was started, as a
// shell would, not from --cwd.
func TestRelativeAgentCommandResolvesFromTheStartDirectory(t *testing.T) {
	start := t.TempDir()
	if err := os.Mkdir(filepath.Join(start, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fakeAgent, filepath.Join(start, "bin", "agent")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(start)
	code, out, errOut := acpscope(t, "", "run", "--no-db", "--plain", "--prompt", "x", "--cwd", t.TempDir(), "--", "./bin/agent")
	if code != exitOK || !strings.Contains(out, "turn ended: end_turn") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}

// --db with a scheme acpscope does not support is refused as such, not
// taken as a SQLite file name; a SQLite file in a directory acpscope
// cannot write says so.
func TestDatabaseErrorsSayWhatIsWrong(t *testing.T) {
	for _, args := range [][]string{
		{"replay", "--plain"}, {"subagents", "--session", "s"}, {"health"},
		{"sessions"}, {"migrate"}, {"migrate", "--dry-run"}, {"web", "--addr", "127.0.0.1:0"},
	} {
		code, _, errOut := acpscope(t, "", append(args, "--db", "mysql://u@localhost/db")...)
		if code != exitUsage || !strings.Contains(errOut, "unsupported") || !strings.Contains(errOut, "mysql") {
			t.Fatalf("%s with a mysql DSN: exit %d, stderr %q", args[0], code, errOut)
		}
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		dir = "/sys" // root writes anywhere but in sysfs
	}
	code, _, errOut := acpscope(t, "", "replay", "--plain", "--db", filepath.Join(dir, "scope.db"))
	if code != exitUsage || !strings.Contains(errOut, "not writable") {
		t.Fatalf("unwritable directory: exit %d, stderr %q", code, errOut)
	}
}
