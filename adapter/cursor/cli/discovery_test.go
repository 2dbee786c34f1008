package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pathDiscoverer resolves candidates on a private PATH.
func pathDiscoverer(pathDirs ...string) *Discoverer {
	path := strings.Join(pathDirs, string(os.PathListSeparator))
	return &Discoverer{
		Getenv: func(string) string { return "" },
		LookPath: func(name string) (string, error) {
			if strings.Contains(name, "/") {
				return name, nil
			}
			for _, dir := range filepath.SplitList(path) {
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
			return "", os.ErrNotExist
		},
		ProbeTimeout: 10 * time.Second,
	}
}

func assertNoPath(t *testing.T, v any, dirs ...string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if strings.Contains(string(b), d) {
			t.Fatalf("public payload leaks %q: %s", d, b)
		}
	}
}

// docs/cursor-cli.md#scenario-1.
func TestCatalogWithCursorBin(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	bin := fakeBin(t, dir, "my-cursor")
	d := &Discoverer{Getenv: func(k string) string {
		if k == SourceEnv {
			return bin
		}
		return ""
	}}
	entry, exe := d.Catalog(testCtx(t))
	if !entry.Available || exe == nil || exe.Path() != bin || entry.Executable != "my-cursor" {
		t.Fatalf("catalog = %+v", entry)
	}
	if entry.Version != "2026.08.11-e8db854" {
		t.Fatalf("version = %q", entry.Version)
	}
	assertNoPath(t, entry, dir)
	assertNoPath(t, exe, dir)
	if exe.String() != "my-cursor" {
		t.Fatalf("String() = %q", exe.String())
	}
	h := HealthCapability()
	if b, _ := json.Marshal(h); string(b) != `{"available":true,"version":2,"instruction_channel":"prompt_envelope","trusted_system_instruction_channel":false}` {
		t.Fatalf("health = %s", b)
	}
}

// docs/cursor-cli.md#scenario-1 counterpart: a set but incompatible CURSOR_BIN is
// authoritative; PATH is not consulted.
func TestCursorBinIsAuthoritative(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	legacy := fakeBin(t, dir, "legacy", fakeHelpEnv+"=legacy")
	good := t.TempDir()
	fakeBin(t, good, "cursor-agent")
	d := pathDiscoverer(good)
	d.Getenv = func(k string) string {
		if k == SourceEnv {
			return legacy
		}
		return ""
	}
	disc := d.Discover(testCtx(t))
	if disc.Selected != nil || len(disc.Candidates) != 1 || disc.Candidates[0].Status != CandidateIncompatible {
		t.Fatalf("discovery = %+v", disc)
	}
}

// docs/cursor-cli.md#scenario-2.
func TestLegacyCursorAgentDoesNotShadowAgent(t *testing.T) {
	checkNoLeftovers(t)
	a, b := t.TempDir(), t.TempDir()
	fakeBin(t, a, "cursor-agent", fakeHelpEnv+"=legacy")
	fakeBin(t, b, "agent")
	disc := pathDiscoverer(a, b).Discover(testCtx(t))
	if disc.Selected == nil || disc.Selected.Name != "agent" {
		t.Fatalf("selected = %+v", disc)
	}
	c := disc.Candidates[0]
	if c.Name != "cursor-agent" || c.Status != CandidateIncompatible || !strings.Contains(strings.Join(c.Missing, ","), "trust") {
		t.Fatalf("cursor-agent report = %+v", c)
	}
	assertNoPath(t, disc, a, b)
}

// docs/cursor-cli.md#scenario-3.
func TestForeignAgentIsUnavailableHealthStillV2(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	fakeBin(t, dir, "agent", fakeHelpEnv+"=foreign")
	entry, exe := pathDiscoverer(dir).Catalog(testCtx(t))
	if entry.Available || exe != nil {
		t.Fatalf("catalog = %+v", entry)
	}
	if entry.Candidates[0].Status != CandidateNotFound || entry.Candidates[1].Status != CandidateIncompatible {
		t.Fatalf("candidates = %+v", entry.Candidates)
	}
	if h := HealthCapability(); !h.Available || h.Version != 2 {
		t.Fatalf("health = %+v", h)
	}
	assertNoPath(t, entry, dir)
}

// docs/cursor-cli.md#scenario-4.
func TestNotLoggedInNamesExecutableNotPath(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	fakeBin(t, dir, "cursor-agent", fakeStatusEnv+"=out")
	entry, exe := pathDiscoverer(dir).Catalog(testCtx(t))
	if entry.Available || exe != nil || len(entry.Actions) != 1 {
		t.Fatalf("catalog = %+v", entry)
	}
	if a := entry.Actions[0]; a.Kind != "login" || a.Command != "cursor-agent login" {
		t.Fatalf("action = %+v", a)
	}
	assertNoPath(t, entry, dir)
}

// docs/cursor-cli.md#scenario-5.
func TestHangingHelpTimesOut(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	fakeBin(t, dir, "cursor-agent", fakeHelpEnv+"=hang")
	d := pathDiscoverer(dir)
	d.ProbeTimeout = 300 * time.Millisecond
	disc := d.Discover(testCtx(t))
	if disc.Selected != nil || disc.Candidates[0].Status != CandidateProbeFailed {
		t.Fatalf("discovery = %+v", disc)
	}
}

// Probe cache: verdicts are keyed by file identity, so a changed binary is
// re-probed.
func TestProbeCacheKeyedByFile(t *testing.T) {
	checkNoLeftovers(t)
	dir := t.TempDir()
	fakeBin(t, dir, "cursor-agent", fakeHelpEnv+"=legacy")
	d := pathDiscoverer(dir)
	if disc := d.Discover(testCtx(t)); disc.Selected != nil {
		t.Fatalf("legacy selected")
	}
	// Replace with a compatible one (different size, new inode).
	p := filepath.Join(dir, "cursor-agent")
	os.Remove(p)
	fakeBin(t, dir, "cursor-agent", fakeHelpEnv+"=compatible", "PADDING=xxxxxxxxxxxxxxxx")
	if disc := d.Discover(testCtx(t)); disc.Selected == nil {
		t.Fatalf("changed binary not re-probed: %+v", disc)
	}
}

// docs/cursor-cli.md#scenario-39 (with the executable): the models subcommand variant.
func TestListModelsBothForms(t *testing.T) {
	checkNoLeftovers(t)
	for _, help := range []string{"compatible", "models-subcommand"} {
		dir := t.TempDir()
		fakeBin(t, dir, "agent", fakeHelpEnv+"="+help)
		disc := pathDiscoverer(dir).Discover(testCtx(t))
		if disc.Selected == nil {
			t.Fatalf("%s: not selected: %+v", help, disc)
		}
		models, err := disc.Selected.ListModels(testCtx(t))
		if err != nil || len(models) != 4 {
			t.Fatalf("%s: models %+v err %v", help, models, err)
		}
	}
}

// docs/cursor-cli.md#scenario-39.
func TestParseModelList(t *testing.T) {
	models := ParseModelList([]byte(fakeModelList))
	want := []Model{
		{ID: "auto", Label: "Auto", Current: true, Default: true, Router: true},
		{ID: "gpt-5", Label: "GPT-5"},
		{ID: "claude-opus-4-8[context=1m,effort=high,fast=false]", Label: "Claude Opus 4.8 (1M, high)"},
		{ID: "sonnet-4", Label: "Sonnet 4", Default: true},
	}
	if len(models) != len(want) {
		t.Fatalf("models = %+v", models)
	}
	for i := range want {
		if models[i] != want[i] {
			t.Errorf("model %d = %+v, want %+v", i, models[i], want[i])
		}
	}
	if d, ok := DefaultModel(models); !ok || d.ID != "auto" {
		t.Fatalf("default = %+v", d)
	}
	if err := ValidateModel("gpt-5", models); err != nil {
		t.Fatal(err)
	}
	if err := ValidateModel("gpt-6", models); err == nil {
		t.Fatal("unknown model accepted")
	}
	if len(ParseModelList([]byte("Available models\n\n-rf - evil\nTip: x\n"))) != 0 {
		t.Fatal("flag-like id accepted")
	}
}

func TestCheckHelp(t *testing.T) {
	for help, ok := range map[string]bool{
		compatibleHelp:             true,
		modelsSubcommandHelp:       true,
		legacyHelp:                 false,
		foreignHelp:                false,
		"\x1b[1m" + compatibleHelp: true,
	} {
		if v := checkHelp(StripANSI(help)); v.compatible != ok {
			t.Errorf("help %.40q: compatible=%t missing=%v", help, v.compatible, v.missing)
		}
	}
}
