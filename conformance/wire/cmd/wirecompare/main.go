// Command wirecompare compares the transcripts the wire harness wrote for
// upstream github.com/coder/acp-go-sdk v0.13.5 and for our SDK, byte for
// byte, and checks every difference against the allowlist of deliberate
// changes. It prints a table and exits non-zero on any failure:
//
//   - a scenario whose transcripts differ without an allowlist entry, or
//     whose difference lacks the bytes the entry says it shows;
//   - an allowlist entry whose difference did not occur (the deliberate
//     change is missing from our SDK) or whose pinning test is not found;
//   - a scenario that gave different transcripts in two runs of the same
//     build (the scenario, not the SDK, is nondeterministic);
//   - a scenario missing from either side.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
)

// Transcript mirrors the harness's transcript of one scenario.
type Transcript struct {
	Name   string   `json:"name"`
	Side   string   `json:"side"`
	Lines  []string `json:"lines"`
	Events []string `json:"events"`
	Notes  []string `json:"notes"`
}

// Results mirrors the harness's output file.
type Results struct {
	Label       string       `json:"label"`
	Transcripts []Transcript `json:"transcripts"`
}

// Allowed is one deliberate difference from upstream.
type Allowed struct {
	// Name is how the table reports the difference.
	Name string `json:"name"`
	// Why says what we changed and why.
	Why string `json:"why"`
	// PinnedBy names the test in sdk/ that pins the behaviour, as
	// "path/to/file_test.go:TestName" relative to the repository root.
	PinnedBy []string `json:"pinnedBy"`
	// Scenarios are the scenarios whose transcripts may differ.
	Scenarios []string `json:"scenarios"`
	// ForkContains are substrings our SDK's transcript of each listed
	// scenario must contain, so only the intended difference is allowed.
	ForkContains []string `json:"forkContains"`
	// UpstreamContains are substrings upstream's transcript must contain.
	UpstreamContains []string `json:"upstreamContains"`
}

// Summary is the machine-readable outcome, for run.sh's final table.
type Summary struct {
	Scenarios int      `json:"scenarios"`
	Identical int      `json:"identical"`
	Allowed   []string `json:"allowed"`
	Failures  []string `json:"failures"`
}

func main() {
	upstream := flag.String("upstream", "", "transcripts of the upstream build")
	fork := flag.String("fork", "", "transcripts of our SDK's build")
	upstream2 := flag.String("upstream-again", "", "a second run of the upstream build (determinism check)")
	fork2 := flag.String("fork-again", "", "a second run of our SDK's build (determinism check)")
	allowPath := flag.String("allow", "allowlist.json", "allowlist of deliberate differences")
	root := flag.String("root", "../..", "repository root, to find the pinning tests")
	summaryPath := flag.String("summary", "", "write a JSON summary here")
	diffLines := flag.Int("diff-lines", 60, "lines of diff shown per failing scenario")
	flag.Parse()

	up, err := load(*upstream)
	check(err)
	fk, err := load(*fork)
	check(err)
	allow, err := loadAllowlist(*allowPath)
	check(err)

	sum := compare(os.Stdout, up, fk, allow, *root, *diffLines)
	for _, again := range []struct{ label, path string }{{"upstream", *upstream2}, {"fork", *fork2}} {
		if again.path == "" {
			continue
		}
		first := up
		if again.label == "fork" {
			first = fk
		}
		second, err := load(again.path)
		check(err)
		for _, name := range sortedNames(first) {
			if d := cmp.Diff(first[name], second[name]); d != "" {
				sum.Failures = append(sum.Failures, fmt.Sprintf("%s: nondeterministic on %s (two runs differ)", name, again.label))
				printDiff(os.Stdout, name+" ("+again.label+" run 1 vs run 2)", d, *diffLines)
			}
		}
	}

	printTable(os.Stdout, sum, allow)
	fmt.Printf("SUMMARY scenarios=%d identical=%d allowed=%d failures=%d\n", sum.Scenarios, sum.Identical, len(sum.Allowed), len(sum.Failures))
	if *summaryPath != "" {
		b, _ := json.MarshalIndent(sum, "", " ")
		check(os.WriteFile(*summaryPath, append(b, '\n'), 0o644))
	}
	if len(sum.Failures) > 0 {
		os.Exit(1)
	}
}

func compare(w io.Writer, up, fk map[string]Transcript, allow []Allowed, root string, diffLines int) Summary {
	var sum Summary
	byScenario := map[string]*Allowed{}
	for i := range allow {
		for _, s := range allow[i].Scenarios {
			byScenario[s] = &allow[i]
		}
	}
	occurred := map[string]bool{}

	names := sortedNames(up)
	for n := range fk {
		if _, ok := up[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)

	for _, name := range names {
		sum.Scenarios++
		u, okU := up[name]
		f, okF := fk[name]
		if !okU || !okF {
			sum.Failures = append(sum.Failures, name+": missing from one build's transcripts")
			continue
		}
		d := cmp.Diff(u, f)
		if d == "" {
			sum.Identical++
			continue
		}
		a := byScenario[name]
		if a == nil {
			sum.Failures = append(sum.Failures, name+": transcripts differ and no allowlist entry covers it")
			printDiff(w, name+" (-upstream +fork)", d, diffLines)
			continue
		}
		if missing := missingSubstrings(f, a.ForkContains); len(missing) > 0 {
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s: differs, but our transcript lacks %q expected by allowlist entry %s", name, missing, a.Name))
			printDiff(w, name+" (-upstream +fork)", d, diffLines)
			continue
		}
		if missing := missingSubstrings(u, a.UpstreamContains); len(missing) > 0 {
			sum.Failures = append(sum.Failures, fmt.Sprintf("%s: differs, but upstream's transcript lacks %q expected by allowlist entry %s", name, missing, a.Name))
			printDiff(w, name+" (-upstream +fork)", d, diffLines)
			continue
		}
		occurred[name] = true
		sum.Allowed = append(sum.Allowed, a.Name+": "+name)
	}

	for _, a := range allow {
		for _, s := range a.Scenarios {
			if _, ok := up[s]; !ok {
				sum.Failures = append(sum.Failures, fmt.Sprintf("allowlist entry %s names unknown scenario %s", a.Name, s))
			} else if !occurred[s] && up[s].Name != "" && cmp.Diff(up[s], fk[s]) == "" {
				sum.Failures = append(sum.Failures, fmt.Sprintf("allowlist entry %s: %s shows no difference (is the deliberate change missing?)", a.Name, s))
			}
		}
		if len(a.PinnedBy) == 0 {
			sum.Failures = append(sum.Failures, fmt.Sprintf("allowlist entry %s names no pinning test", a.Name))
		}
		for _, p := range a.PinnedBy {
			if err := findTest(root, p); err != nil {
				sum.Failures = append(sum.Failures, fmt.Sprintf("allowlist entry %s: %v", a.Name, err))
			}
		}
	}
	return sum
}

// missingSubstrings returns the wanted substrings absent from t.
func missingSubstrings(t Transcript, want []string) []string {
	all := strings.Join(t.Lines, "\n") + "\n" + strings.Join(t.Events, "\n") + "\n" + strings.Join(t.Notes, "\n")
	var missing []string
	for _, s := range want {
		if !strings.Contains(all, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// findTest checks that "file_test.go:TestName" names an existing test.
func findTest(root, ref string) error {
	file, test, ok := strings.Cut(ref, ":")
	if !ok || file == "" || test == "" {
		return fmt.Errorf("pinning test %q is not file:TestName", ref)
	}
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return fmt.Errorf("pinning test %s: %v", ref, err)
	}
	defer f.Close()
	re := regexp.MustCompile(`^func ` + regexp.QuoteMeta(test) + `\(`)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		if re.MatchString(sc.Text()) {
			return nil
		}
	}
	return fmt.Errorf("pinning test %s not found", ref)
}

func printDiff(w io.Writer, title, d string, max int) {
	fmt.Fprintf(w, "--- %s\n", title)
	lines := strings.Split(strings.TrimRight(d, "\n"), "\n")
	if len(lines) > max {
		lines = append(lines[:max], fmt.Sprintf("… %d more lines", len(lines)-max))
	}
	for _, l := range lines {
		fmt.Fprintln(w, "   ", l)
	}
}

func printTable(w io.Writer, s Summary, allow []Allowed) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "WIRE CONFORMANCE: upstream github.com/coder/acp-go-sdk v0.13.5 vs sdk/")
	fmt.Fprintf(w, "  %-22s %d\n", "scenarios run", s.Scenarios)
	fmt.Fprintf(w, "  %-22s %d\n", "identical", s.Identical)
	fmt.Fprintf(w, "  %-22s %d\n", "allowed differences", len(s.Allowed))
	pins := map[string][]string{}
	for _, a := range allow {
		pins[a.Name] = a.PinnedBy
	}
	for _, a := range s.Allowed {
		name, _, _ := strings.Cut(a, ":")
		fmt.Fprintf(w, "    %-66s pinned by %s\n", a, strings.Join(pins[name], ", "))
	}
	fmt.Fprintf(w, "  %-22s %d\n", "failures", len(s.Failures))
	for _, f := range s.Failures {
		fmt.Fprintln(w, "    "+f)
	}
}

func load(path string) (map[string]Transcript, error) {
	if path == "" {
		return nil, fmt.Errorf("missing transcript file flag")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := make(map[string]Transcript, len(r.Transcripts))
	for _, t := range r.Transcripts {
		m[t.Name] = t
	}
	return m, nil
}

func loadAllowlist(path string) ([]Allowed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list []Allowed
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]string{}
	for _, a := range list {
		for _, s := range a.Scenarios {
			if prev, dup := seen[s]; dup {
				return nil, fmt.Errorf("%s: scenario %s is in entries %s and %s", path, s, prev, a.Name)
			}
			seen[s] = a.Name
		}
	}
	return list, nil
}

func sortedNames(m map[string]Transcript) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirecompare:", err)
		os.Exit(2)
	}
}
