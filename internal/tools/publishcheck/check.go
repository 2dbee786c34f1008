package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// Module paths as a consumer sees them once the repository is tagged.
const (
	rootPath = "github.com/kdlbs/acp-go-sdk"
	sdkPath  = "github.com/kdlbs/acp-go-sdk/sdk"
	// upstreamPath is what the SDK module declares in its go.mod and what a
	// consumer replaces.
	upstreamPath = "github.com/coder/acp-go-sdk"
)

// publishedModule is one directory of the repository published as a module.
type publishedModule struct {
	dir  string // relative to the repository root, slash-separated
	path string // the module path it is published at
}

var published = []publishedModule{
	{dir: ".", path: rootPath},
	{dir: "sdk", path: sdkPath},
}

func run(repo, version, proxyDir string) error {
	if proxyDir == "" {
		tmp, err := os.MkdirTemp("", "publishcheck-proxy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		proxyDir = tmp
	}
	filesOf := map[string][]zip.File{}
	sum := sha256.New()
	for _, pm := range published {
		files, err := gitFiles(repo, pm.dir)
		if err != nil {
			return err
		}
		if err := checkFiles(files); err != nil {
			return fmt.Errorf("module %s (%s): %w", pm.path, pm.dir, err)
		}
		fmt.Printf("publishcheck: %s (%s/) passes the module zip rules\n", pm.path, pm.dir)
		if err := hashFiles(sum, files); err != nil {
			return err
		}
		filesOf[pm.path] = files
	}
	if version == "" {
		// Named after the content, so the regular module cache never
		// serves an earlier tree's copy under the same version.
		version = fmt.Sprintf("v0.0.0-publishcheck.h%x", sum.Sum(nil)[:8])
	}
	for _, pm := range published {
		mv := module.Version{Path: pm.path, Version: version}
		if err := writeProxy(proxyDir, mv, filesOf[pm.path]); err != nil {
			return fmt.Errorf("module %s: %w", pm.path, err)
		}
	}
	if err := buildConsumer(proxyDir, version); err != nil {
		return fmt.Errorf("consumer build through the proxy: %w", err)
	}
	fmt.Printf("publishcheck: a consumer fetched %s@%s through the proxy and built\n", rootPath, version)
	return nil
}

// hashFiles adds every file's path and content to h.
func hashFiles(h io.Writer, files []zip.File) error {
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00", f.Path())
		r, err := f.Open()
		if err != nil {
			return err
		}
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// diskFile is a file of the working tree as the zip rules see it.
type diskFile struct {
	rel string // slash path relative to the module root
	abs string
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }

// gitFiles lists the files of dir that a tag would publish: tracked files
// and untracked files git does not ignore, as they are in the working tree
// (a tracked file deleted from the tree is left out).
func gitFiles(repo, dir string) ([]zip.File, error) {
	cmd := exec.Command("git", "-C", repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	seen := map[string]bool{}
	var files []zip.File
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		abs := filepath.Join(repo, filepath.FromSlash(name))
		if _, err := os.Lstat(abs); errors.Is(err, os.ErrNotExist) {
			continue
		}
		rel := name
		if dir != "." {
			rel = strings.TrimPrefix(name, dir+"/")
		}
		files = append(files, diskFile{rel: rel, abs: abs})
	}
	return files, nil
}

// checkFiles applies the module zip rules to files. Files of nested modules
// and vendor directories are left out of the zip, as the go command does;
// an invalid path (a name reserved on Windows, a character the rules reject,
// two names equal but for case) or a size over the limits is an error.
func checkFiles(files []zip.File) error {
	cf, err := zip.CheckFiles(files)
	if len(cf.Invalid) > 0 {
		var b strings.Builder
		for _, fe := range cf.Invalid {
			fmt.Fprintf(&b, "\n\t%s: %v", fe.Path, fe.Err)
		}
		return fmt.Errorf("files the module zip rules reject:%s", b.String())
	}
	if cf.SizeError != nil {
		return cf.SizeError
	}
	return err
}

// writeProxy adds one module version to a GOPROXY file tree.
func writeProxy(proxyDir string, mv module.Version, files []zip.File) error {
	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxyDir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, mv.Version)
	zf, err := os.Create(base + ".zip")
	if err != nil {
		return err
	}
	if err := zip.Create(zf, mv, files); err != nil {
		zf.Close()
		return err
	}
	if err := zf.Close(); err != nil {
		return err
	}
	var goMod []byte
	for _, f := range files {
		if f.Path() == "go.mod" {
			goMod, err = os.ReadFile(f.(diskFile).abs)
			if err != nil {
				return err
			}
		}
	}
	if goMod == nil {
		return errors.New("no go.mod at the module root")
	}
	info, err := json.Marshal(struct{ Version string }{mv.Version})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		base + ".mod":              goMod,
		base + ".info":             info,
		filepath.Join(dir, "list"): []byte(mv.Version + "\n"),
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// consumerMain uses every public package of the root module and the SDK.
const consumerMain = `// A consumer of the published modules (written by publishcheck).
package main

import (
	"fmt"

	acp "github.com/coder/acp-go-sdk"
	"github.com/kdlbs/acp-go-sdk/adapter"
	_ "github.com/kdlbs/acp-go-sdk/adapter/claude"
	_ "github.com/kdlbs/acp-go-sdk/adapter/cursor"
	_ "github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
	_ "github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/acpupdate"
	_ "github.com/kdlbs/acp-go-sdk/persistence"
)

func main() {
	fmt.Println(acp.ProtocolVersionNumber, adapter.PayloadKindSubagentTask)
}
`

// buildConsumer writes a consumer module that requires the root module and
// replaces the upstream SDK with ours, the way the README tells consumers
// to, and builds it (and the acpscope command) with the proxy first.
func buildConsumer(proxyDir, version string) error {
	work, err := os.MkdirTemp("", "publishcheck-consumer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "consumer")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	goMod := fmt.Sprintf(`module example.com/publishconsumer

go 1.26

require %s %s

replace %s => %s %s
`, rootPath, version, upstreamPath, sdkPath, version)
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte(goMod), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(consumerMain), 0o644); err != nil {
		return err
	}

	goproxy := "file://" + filepath.ToSlash(mustAbs(proxyDir))
	if up := goEnv("GOPROXY"); up != "" {
		goproxy += "," + up
	}
	env := append(os.Environ(),
		"GOPROXY="+goproxy,
		"GONOSUMDB="+rootPath, // not in the checksum database before it is published
		"GOFLAGS=-mod=mod",
		"GOWORK=off",
	)
	defer forgetVersion(goEnv("GOMODCACHE"), version)
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "-o", os.DevNull, "."},
		{"build", "-o", os.DevNull, rootPath + "/cmd/acpscope"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = src
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// forgetVersion removes the check's own version of our modules from the
// regular module cache (the go command makes its files read-only); the
// dependencies it downloaded stay, as any build's would, so the next run's
// cgo build of SQLite comes from the build cache.
func forgetVersion(modCache, version string) {
	if modCache == "" {
		return
	}
	root := filepath.Join(modCache, filepath.FromSlash(rootPath))
	targets := []string{
		root + "@" + version,
		filepath.Join(root, "sdk@"+version),
	}
	for _, p := range published {
		escaped, err := module.EscapePath(p.path)
		if err != nil {
			continue
		}
		dl := filepath.Join(modCache, "cache", "download", filepath.FromSlash(escaped), "@v")
		matches, _ := filepath.Glob(filepath.Join(dl, version+".*"))
		targets = append(targets, matches...)
		dropListed(filepath.Join(dl, "list"), version)
	}
	for _, t := range targets {
		_ = filepath.WalkDir(t, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		_ = os.RemoveAll(t)
	}
	// Directories left empty go too, deepest first.
	for _, dir := range []string{
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(rootPath), "sdk", "@v"),
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(rootPath), "sdk"),
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(rootPath), "@v"),
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(rootPath)),
		filepath.Join(modCache, "cache", "download", filepath.FromSlash(path.Dir(rootPath))),
		root,
		filepath.Dir(root),
	} {
		_ = os.Remove(dir) // fails, as it should, unless empty
	}
}

// dropListed removes version from a module cache version list, and the
// list itself when nothing else is listed.
func dropListed(list, version string) {
	data, err := os.ReadFile(list)
	if err != nil {
		return
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" && line != version {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		_ = os.Remove(list)
		return
	}
	_ = os.WriteFile(list, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}
