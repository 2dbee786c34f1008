// Package example_test builds the example agent and client and lets them
// complete a turn with each other over a real subprocess's stdio.
package example_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binaries holds the example programs, built once by TestMain.
var binaries struct {
	agent, client string
	err           error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "acp-example-")
	if err != nil {
		panic(err)
	}
	binaries.agent, binaries.client = filepath.Join(dir, "agent"), filepath.Join(dir, "client")
	if _, err := exec.LookPath("go"); err != nil {
		binaries.err = err
	} else {
		for _, name := range []string{"agent", "client"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "./"+name).CombinedOutput()
			if err != nil {
				binaries.err = fmt.Errorf("go build ./%s: %v\n%s", name, err, out)
				break
			}
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// programs returns the built agent and client, failing the test when the
// build failed.
func programs(t *testing.T) (agent, client string) {
	t.Helper()
	if binaries.err != nil {
		t.Fatalf("building the examples: %v", binaries.err)
	}
	return binaries.agent, binaries.client
}

func TestExampleAgentAndClientCompleteATurn(t *testing.T) {
	agent, client := programs(t)

	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, client, "-agent", agent, "-prompt", "read notes.txt")
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	want := []string{
		"connected to example-agent (protocol 1)",
		"You said: read notes.txt",
		"[tool read-1] Read notes.txt (pending)",
		"[tool read-1] completed: 3 lines",
		"stop reason: end_turn",
	}
	text := string(out)
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("output lacks %q:\n%s", w, text)
		}
	}
	// Order: the whole streamed reply precedes the stop reason (the barrier).
	if strings.Index(text, "completed: 3 lines") > strings.Index(text, "stop reason") {
		t.Errorf("updates arrived after Prompt returned:\n%s", text)
	}
}

func TestExampleClientRefusesFilesOutsideItsRoot(t *testing.T) {
	agent, client := programs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, client, "-agent", agent, "-prompt", "read ../../etc/passwd")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "[tool read-1] failed") || !strings.Contains(string(out), "stop reason: end_turn") {
		t.Fatalf("output:\n%s", out)
	}
}
