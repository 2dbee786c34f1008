// Command wire is the wire-conformance harness. The same source is built
// twice, once against upstream github.com/coder/acp-go-sdk v0.13.5
// (-modfile=upstream.mod) and once against our SDK (-modfile=fork.mod);
// each build plays every scenario of scenarios/*.json against a real
// ClientSideConnection or AgentSideConnection over pipes and writes the
// transcripts (the SDK's outbound wire lines, the calls its handlers saw,
// the results its outbound calls returned). cmd/wirecompare then compares
// the two transcript files byte for byte.
//
// Each scenario runs in a child process of its own, so a scenario that
// crashes one build (upstream has no panic recovery) is recorded as a
// crash instead of ending the run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Transcript is what one build did in one scenario.
type Transcript struct {
	Name string `json:"name"`
	Side string `json:"side"`
	// Lines are the SDK's outbound wire lines, in order.
	Lines []string `json:"lines"`
	// Events are handler invocations and call outcomes, in order.
	Events []string `json:"events"`
	// Notes are expired waits, crashes and harness problems.
	Notes []string `json:"notes"`
}

// Results is the file one build writes.
type Results struct {
	Label       string       `json:"label"`
	Transcripts []Transcript `json:"transcripts"`
}

// childTimeout bounds one scenario process (hang guard).
const childTimeout = 60 * time.Second

func main() {
	scenarios := flag.String("scenarios", "scenarios", "directory of scenario files")
	out := flag.String("out", "", "write the transcripts of every scenario to this JSON file")
	label := flag.String("label", "", "label stored in the output (upstream or fork)")
	only := flag.String("only", "", "run only scenarios whose name matches this regexp")
	child := flag.String("child", "", "internal: run one scenario and stream its records to stdout")
	show := flag.Bool("show", false, "print the transcripts instead of writing -out")
	jobs := flag.Int("jobs", 4, "scenario processes run at once")
	flag.Parse()

	list, err := loadScenarios(*scenarios)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(2)
	}
	if *child != "" {
		for i := range list {
			if list[i].Name == *child {
				runScenario(&list[i], os.Stdout)
				return
			}
		}
		fmt.Fprintf(os.Stderr, "wire: no scenario %q\n", *child)
		os.Exit(2)
	}

	var filter *regexp.Regexp
	if *only != "" {
		filter = regexp.MustCompile(*only)
	}
	var selected []Scenario
	for _, s := range list {
		if filter == nil || filter.MatchString(s.Name) {
			selected = append(selected, s)
		}
	}

	res := Results{Label: *label, Transcripts: make([]Transcript, len(selected))}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *jobs))
	for i, s := range selected {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, s Scenario) {
			defer wg.Done()
			defer func() { <-sem }()
			res.Transcripts[i] = runChild(*scenarios, s)
		}(i, s)
	}
	wg.Wait()

	if *show || *out == "" {
		for _, t := range res.Transcripts {
			fmt.Printf("== %s (%s)\n", t.Name, t.Side)
			for _, l := range t.Lines {
				fmt.Println("  out  ", l)
			}
			for _, e := range t.Events {
				fmt.Println("  event", e)
			}
			for _, n := range t.Notes {
				fmt.Println("  note ", n)
			}
		}
		return
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(2)
	}
	if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "wire:", err)
		os.Exit(2)
	}
}

// runChild runs one scenario in a child process and assembles its transcript.
func runChild(dir string, s Scenario) Transcript {
	t := Transcript{Name: s.Name, Side: s.Side, Lines: []string{}, Events: []string{}, Notes: []string{}}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Notes = append(t.Notes, "harness: "+err.Error())
		return t
	}
	cmd := exec.CommandContext(ctx, self, "-scenarios", dir, "-child", s.Name)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	runErr := cmd.Run()

	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<26)
	for sc.Scan() {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Notes = append(t.Notes, "harness: bad record: "+sc.Text())
			continue
		}
		for kind, v := range rec {
			switch kind {
			case "line", "note":
				var s string
				_ = json.Unmarshal(v, &s)
				if kind == "line" {
					t.Lines = append(t.Lines, s)
				} else {
					t.Notes = append(t.Notes, s)
				}
			case "event":
				t.Events = append(t.Events, string(v))
			case "sortLast":
				sortLast(t.Lines, v)
			case "sortLastEvents":
				sortLast(t.Events, v)
			}
		}
	}
	if runErr != nil {
		note := "exit: " + runErr.Error()
		if ctx.Err() != nil {
			note = "exit: scenario process exceeded its hang guard"
		}
		t.Notes = append(t.Notes, note)
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
				t.Notes = append(t.Notes, "crash: "+l)
				break
			}
		}
	}
	return t
}

// sortLast sorts the last n entries of list in place: the documented
// normalisation for steps whose order is inherently concurrent.
func sortLast(list []string, v json.RawMessage) {
	var n int
	_ = json.Unmarshal(v, &n)
	if n > len(list) {
		n = len(list)
	}
	sort.Strings(list[len(list)-n:])
}

func silenceLogs() {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
