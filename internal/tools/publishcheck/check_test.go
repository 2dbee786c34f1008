package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
)

// gitTree makes a git repository holding files (slash path → content) and
// returns its root.
func gitTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}} {
		cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return root
}

func checkTree(t *testing.T, files map[string]string) error {
	t.Helper()
	root := gitTree(t, files)
	listed, err := gitFiles(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	return checkFiles(listed)
}

func TestCheckRejectsInvalidNames(t *testing.T) {
	for _, bad := range []string{
		"aux.go",          // reserved on Windows, whatever the extension
		"cli/aux.go",      // in a subdirectory too
		"com1.txt",        // another reserved device name
		"nul/x.go",        // reserved as a directory name
		"a:b.go",          // a character the rules reject
		"Readme.md",       // collides with README.md but for case
		"dir/has space\t", // control character
	} {
		t.Run(bad, func(t *testing.T) {
			err := checkTree(t, map[string]string{
				"go.mod":    "module example.com/m\n",
				"README.md": "x",
				bad:         "package m\n",
			})
			if err == nil {
				t.Fatalf("a tree holding %q passed the check", bad)
			}
			if !strings.Contains(err.Error(), "reject") {
				t.Fatalf("error does not name the rejected file: %v", err)
			}
		})
	}
}

func TestCheckAcceptsTreeAndOmitsNestedModules(t *testing.T) {
	root := gitTree(t, map[string]string{
		"go.mod":           "module example.com/m\n",
		"m.go":             "package m\n",
		"auxcommand.go":    "package m\n", // aux only as a whole element is reserved
		"nested/go.mod":    "module example.com/m/nested\n",
		"nested/aux.go":    "package nested\n", // belongs to the nested module
		"sub/testdata/x.j": "{}",
	})
	files, err := gitFiles(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFiles(files); err != nil {
		t.Fatalf("a valid tree failed: %v", err)
	}
	// The nested module is checked on its own, where aux.go is its file.
	nested, err := gitFiles(root, "nested")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkFiles(nested); err == nil {
		t.Fatal("nested module holding aux.go passed")
	}
}

func TestProxyLayout(t *testing.T) {
	root := gitTree(t, map[string]string{
		"go.mod": "module example.com/M\n",
		"m.go":   "package m\n",
	})
	files, err := gitFiles(root, ".")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	mv := module.Version{Path: "example.com/M", Version: "v0.1.0"}
	if err := writeProxy(proxy, mv, files); err != nil {
		t.Fatal(err)
	}
	// Upper case is escaped in proxy paths.
	for _, name := range []string{"list", "v0.1.0.info", "v0.1.0.mod", "v0.1.0.zip"} {
		if _, err := os.Stat(filepath.Join(proxy, "example.com", "!m", "@v", name)); err != nil {
			t.Error(err)
		}
	}
}

func TestRepositoryPassesZipRules(t *testing.T) {
	for _, pm := range published {
		files, err := gitFiles(filepath.Join("..", "..", ".."), pm.dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkFiles(files); err != nil {
			t.Errorf("%s: %v", pm.path, err)
		}
	}
}
