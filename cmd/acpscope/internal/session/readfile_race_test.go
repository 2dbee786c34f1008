package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// TestReadTextFileBeneathRootUnderSwapRace hammers fs/read_text_file while
// another goroutine swaps a path component between a directory inside the
// root and a symbolic link to a directory outside it. A check that
// resolves the path and then opens it by name serves the outside file in
// the window between the two; an open that resolves beneath the root in
// one step never does.
func TestReadTextFileBeneathRootUnderSwapRace(t *testing.T) {
	c := &scopeClient{}
	hammerSwap(t, func(root, path string) (string, error) {
		c.root = root
		resp, err := c.ReadTextFile(context.Background(), acp.ReadTextFileRequest{Path: path})
		return resp.Content, err
	})
}

// hammerSwap runs reads of <root>/d/f through read while d is swapped
// between a directory inside root and a symbolic link leading outside, and
// fails if any read returns the outside file.
func hammerSwap(t *testing.T, read func(root, path string) (string, error)) {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	link := filepath.Join(root, "link")
	swap := filepath.Join(root, "d")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "f"), []byte("inside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// d is the directory, then the link, in turn.
			_ = os.Rename(real, swap)
			_ = os.Rename(swap, real)
			_ = os.Rename(link, swap)
			_ = os.Rename(swap, link)
		}
	}()
	escaped, served := 0, 0
	for range 20000 {
		content, err := read(root, filepath.Join(swap, "f"))
		if err != nil {
			continue
		}
		served++
		if strings.Contains(content, "SECRET") {
			escaped++
		}
	}
	close(stop)
	wg.Wait()
	if escaped > 0 {
		t.Fatalf("%d of %d served reads returned the file outside the root", escaped, served)
	}
	if served == 0 {
		t.Log("no read hit the directory phase of the swap (the machine is loaded); the check still held")
	}
}
