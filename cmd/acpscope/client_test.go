package main

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestReadTextFileStaysBelowRoot pins what the client serves an agent: a
// regular file below the root, with line and limit applied; never a file
// reached through a symbolic link leading out, a path outside, a FIFO (which
// would block) or a device (which would never end).
func TestReadTextFileStaysBelowRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &scopeClient{root: root}
	ctx := context.Background()

	line, limit := 2, 1
	resp, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: filepath.Join(root, "a.txt"), Line: &line, Limit: &limit})
	if err != nil || resp.Content != "two\n" {
		t.Fatalf("a.txt line 2 limit 1: %q, %v", resp.Content, err)
	}
	for _, p := range []string{
		filepath.Join(root, "link"),
		filepath.Join(root, "..", filepath.Base(outside), "secret"),
		filepath.Join(root, "zero"),
		filepath.Join(root, "fifo"),
		filepath.Join(root, "missing"),
		"relative.txt",
	} {
		if resp, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p}); err == nil {
			t.Errorf("%s: served %q, want an error", p, resp.Content)
		}
	}
}
