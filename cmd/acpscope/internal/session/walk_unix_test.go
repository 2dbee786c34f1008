//go:build unix

package session

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The component-wise walk (used where openat2 is missing) holds under the
// same swap race as the openat2 path, and refuses every symbolic link.
func TestWalkBeneathUnderSwapRace(t *testing.T) {
	hammerSwap(t, func(root, path string) (string, error) {
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return "", err
		}
		return walkRead(root, rel)
	})
}

func TestWalkBeneathRefusesSymlinks(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	if got, err := walkRead(root, "a.txt"); err != nil || got != "a" {
		t.Fatalf("a.txt: %q, %v", got, err)
	}
	for _, rel := range []string{"in", "../x", "a.txt/..", ""} {
		if _, err := walkRead(root, rel); err == nil {
			t.Errorf("%q: served, want an error", rel)
		}
	}
}

// walkRead reads rel below root through walkBeneath.
func walkRead(root, rel string) (string, error) {
	dir, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return "", err
	}
	defer syscall.Close(dir)
	fd, err := walkBeneath(dir, rel)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}
