package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli/stream"
	"github.com/kdlbs/acp-go-sdk/internal/procguard"
)

// Candidate sources, in discovery order.
const (
	SourceEnv  = "CURSOR_BIN"
	SourcePath = "PATH"
)

// Candidate names looked up on PATH when CURSOR_BIN is not set.
var pathCandidates = []string{"cursor-agent", "agent"}

// DefaultProbeTimeout bounds each probe command (--help, --version, status).
const DefaultProbeTimeout = 10 * time.Second

// RequiredFeatures are the help-text features a compatible CLI advertises.
var RequiredFeatures = []string{
	"print", "output-format stream-json", "resume", "model", "trust", "force", "plan mode", "model listing",
}

// Executable is an admitted, compatibility-probed Cursor CLI. Its absolute
// path is private: JSON and String show only the name, so it never reaches a
// public payload. Turns spawn exactly this path; PATH is never re-resolved.
type Executable struct {
	// Name is the public name ("cursor-agent", "agent", or the base name of
	// CURSOR_BIN), used in actions such as "run `cursor-agent login`".
	Name string `json:"name"`
	// Version is the first line of --version output, when available.
	Version string `json:"version,omitempty"`
	// Source is SourceEnv or SourcePath.
	Source string `json:"source"`

	path       string
	listModels []string
	d          *Discoverer
}

// Path returns the absolute path to spawn. Keep it out of public payloads.
func (e *Executable) Path() string { return e.path }

// String returns the public name.
func (e *Executable) String() string { return e.Name }

// CandidateStatus is the verdict on one candidate.
type CandidateStatus string

// Candidate verdicts.
const (
	CandidateCompatible   CandidateStatus = "compatible"
	CandidateIncompatible CandidateStatus = "incompatible"
	CandidateNotFound     CandidateStatus = "not_found"
	CandidateProbeFailed  CandidateStatus = "probe_failed"
	CandidateNotProbed    CandidateStatus = "not_probed" // an earlier candidate won
)

// CandidateReport describes one candidate for diagnostics; it holds no path.
type CandidateReport struct {
	Name    string          `json:"name"`
	Source  string          `json:"source"`
	Status  CandidateStatus `json:"status"`
	Missing []string        `json:"missing,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Version string          `json:"version,omitempty"`
}

// Discovery is the outcome of one discovery run.
type Discovery struct {
	// Selected is the first compatible candidate, or nil.
	Selected *Executable `json:"selected,omitempty"`
	// Candidates lists every candidate considered, in order.
	Candidates []CandidateReport `json:"candidates"`
}

// Discoverer finds and probes Cursor CLI candidates, caching verdicts by
// (path, device, inode, size, mtime) so an upgraded binary is re-probed.
type Discoverer struct {
	// Getenv reads CURSOR_BIN; os.Getenv when nil.
	Getenv func(string) string
	// LookPath resolves names on PATH; exec.LookPath when nil.
	LookPath func(string) (string, error)
	// ProbeTimeout bounds each probe command; DefaultProbeTimeout when zero.
	ProbeTimeout time.Duration
	// Env is appended to the environment of probe commands (e.g.
	// CURSOR_API_KEY, CURSOR_CONFIG_DIR).
	Env []string
	// Guard tunes the process guard of probe commands.
	Guard procguard.Options

	mu    sync.Mutex
	cache map[fileKey]probeVerdict
}

type fileKey struct {
	path       string
	dev, ino   uint64
	size       int64
	mtimeNanos int64
}

type probeVerdict struct {
	compatible bool
	missing    []string
	listModels []string
	version    string
}

func (d *Discoverer) getenv(k string) string {
	if d.Getenv != nil {
		return d.Getenv(k)
	}
	return os.Getenv(k)
}

func (d *Discoverer) lookPath(name string) (string, error) {
	if d.LookPath != nil {
		return d.LookPath(name)
	}
	return exec.LookPath(name)
}

func (d *Discoverer) probeTimeout() time.Duration {
	if d.ProbeTimeout > 0 {
		return d.ProbeTimeout
	}
	return DefaultProbeTimeout
}

// Discover evaluates CURSOR_BIN, else cursor-agent then agent on PATH, and
// selects the first compatible candidate. A set CURSOR_BIN is authoritative:
// when it is missing or incompatible nothing is selected and PATH is not
// consulted. An incompatible candidate never hides a later compatible one.
func (d *Discoverer) Discover(ctx context.Context) Discovery {
	var out Discovery
	if bin := strings.TrimSpace(d.getenv(SourceEnv)); bin != "" {
		rep, exe := d.candidate(ctx, bin, SourceEnv)
		out.Candidates = append(out.Candidates, rep)
		out.Selected = exe
		return out
	}
	for _, name := range pathCandidates {
		if out.Selected != nil {
			out.Candidates = append(out.Candidates, CandidateReport{Name: name, Source: SourcePath, Status: CandidateNotProbed})
			continue
		}
		rep, exe := d.candidate(ctx, name, SourcePath)
		out.Candidates = append(out.Candidates, rep)
		out.Selected = exe
	}
	return out
}

// candidate resolves and probes one candidate.
func (d *Discoverer) candidate(ctx context.Context, spec, source string) (CandidateReport, *Executable) {
	name := filepath.Base(spec)
	rep := CandidateReport{Name: name, Source: source}
	path, err := d.lookPath(spec)
	if err != nil {
		rep.Status = CandidateNotFound
		if errors.Is(err, exec.ErrDot) {
			rep.Reason = "resolved relative to the current directory; refused"
		} else {
			rep.Reason = "not found"
		}
		return rep, nil
	}
	if path, err = filepath.Abs(path); err != nil {
		rep.Status, rep.Reason = CandidateNotFound, "cannot make the path absolute"
		return rep, nil
	}
	v, err := d.probe(ctx, path)
	if err != nil {
		rep.Status, rep.Reason = CandidateProbeFailed, err.Error()
		return rep, nil
	}
	rep.Version = v.version
	if !v.compatible {
		rep.Status, rep.Missing = CandidateIncompatible, v.missing
		rep.Reason = "help output lacks: " + strings.Join(v.missing, ", ")
		return rep, nil
	}
	rep.Status = CandidateCompatible
	return rep, &Executable{Name: name, Version: v.version, Source: source, path: path, listModels: v.listModels, d: d}
}

func statKey(path string) (fileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
	}
	k := fileKey{path: path, size: fi.Size(), mtimeNanos: fi.ModTime().UnixNano()}
	k.dev, k.ino = fileIdentity(fi)
	return k, nil
}

// probe returns the cached verdict for path or runs --help and --version.
func (d *Discoverer) probe(ctx context.Context, path string) (probeVerdict, error) {
	key, err := statKey(path)
	if err != nil {
		return probeVerdict{}, errors.New("cannot stat the executable")
	}
	d.mu.Lock()
	if v, ok := d.cache[key]; ok {
		d.mu.Unlock()
		return v, nil
	}
	d.mu.Unlock()

	help, _, err := runAux(ctx, path, []string{"--help"}, d.probeTimeout(), d.Env, d.Guard)
	if err != nil {
		// A timed-out probe is a verdict (incompatible), not cached: the
		// next discovery retries.
		return probeVerdict{}, fmt.Errorf("--help failed: %v", err)
	}
	v := checkHelp(StripANSI(string(help)))
	if v.compatible {
		if out, code, err := runAux(ctx, path, []string{"--version"}, d.probeTimeout(), d.Env, d.Guard); err == nil && code == 0 {
			v.version = probeVersion(out)
		}
	}
	d.mu.Lock()
	if d.cache == nil {
		d.cache = map[fileKey]probeVerdict{}
	}
	d.cache[key] = v
	d.mu.Unlock()
	return v, nil
}

// forget drops every cached verdict for path (after a spawn failure).
func (d *Discoverer) forget(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.cache {
		if k.path == path {
			delete(d.cache, k)
		}
	}
}

func flagRE(flag string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)(^|[\s,\[(|])` + regexp.QuoteMeta(flag) + `($|[\s,=\])|<])`)
}

var (
	rePrintLong    = flagRE("--print")
	rePrintShort   = flagRE("-p")
	reOutputFormat = flagRE("--output-format")
	reStreamJSON   = regexp.MustCompile(`\bstream-json\b`)
	reResume       = flagRE("--resume")
	reModel        = flagRE("--model")
	reTrust        = flagRE("--trust")
	reForce        = flagRE("--force")
	reMode         = flagRE("--mode")
	rePlan         = regexp.MustCompile(`\bplan\b`)
	reListModels   = flagRE("--list-models")
	reModelsCmd    = regexp.MustCompile(`(?m)^\s*models(\s|$)`)
)

// checkHelp decides compatibility from help text: all eight features must
// be advertised. Proving a flag exists says nothing about what Cursor does
// with it.
func checkHelp(help string) probeVerdict {
	if len(help) > MaxAuxOutputBytes {
		help = help[:MaxAuxOutputBytes]
	}
	var v probeVerdict
	need := func(ok bool, feature string) {
		if !ok {
			v.missing = append(v.missing, feature)
		}
	}
	need(rePrintLong.MatchString(help) || rePrintShort.MatchString(help), "print")
	need(reOutputFormat.MatchString(help) && reStreamJSON.MatchString(help), "output-format stream-json")
	need(reResume.MatchString(help), "resume")
	need(reModel.MatchString(help), "model")
	need(reTrust.MatchString(help), "trust")
	need(reForce.MatchString(help), "force")
	need(reMode.MatchString(help) && rePlan.MatchString(help), "plan mode")
	switch {
	case reListModels.MatchString(help):
		v.listModels = []string{"--list-models"}
	case reModelsCmd.MatchString(help):
		v.listModels = []string{"models"}
	default:
		need(false, "model listing")
	}
	v.compatible = len(v.missing) == 0
	return v
}

// probeVersion reads the version from --version output: its first
// non-blank line, escape sequences removed, at most 64 bytes of it, with
// control characters escaped (it is printed by acpscope cursor doctor).
func probeVersion(out []byte) string {
	for _, l := range strings.Split(StripANSI(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return stream.Excerpt([]byte(l), 64)
		}
	}
	return ""
}

// ListModels runs the CLI's model listing and parses it.
func (e *Executable) ListModels(ctx context.Context) ([]Model, error) {
	d := e.discoverer()
	out, code, err := runAux(ctx, e.path, e.listModels, d.probeTimeout(), d.Env, d.Guard)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v", e.Name, strings.Join(e.listModels, " "), err)
	}
	if code != 0 {
		return nil, fmt.Errorf("%s %s: exit status %d", e.Name, strings.Join(e.listModels, " "), code)
	}
	return ParseModelList(out), nil
}

// AuthStatus is the outcome of `status`.
type AuthStatus string

// Authentication states.
const (
	AuthLoggedIn    AuthStatus = "logged_in"
	AuthNotLoggedIn AuthStatus = "not_logged_in"
	AuthUnknown     AuthStatus = "unknown"
)

// Status runs `status` and classifies it. The account e-mail it prints is
// never returned.
func (e *Executable) Status(ctx context.Context) AuthStatus {
	d := e.discoverer()
	out, _, err := runAux(ctx, e.path, []string{"status"}, d.probeTimeout(), d.Env, d.Guard)
	if err != nil {
		return AuthUnknown
	}
	text := strings.ToLower(StripANSI(string(out)))
	switch {
	case strings.Contains(text, "not logged in"):
		return AuthNotLoggedIn
	case strings.Contains(text, "logged in"):
		return AuthLoggedIn
	}
	return AuthUnknown
}

func (e *Executable) discoverer() *Discoverer {
	if e.d != nil {
		return e.d
	}
	return &Discoverer{}
}
