package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	acp "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func asRequestError(err error, re **acp.RequestError) bool { return errors.As(err, re) }

// report prints the identity table and returns the exit code: 1 when a
// non-Cursor capture's output differs, a Cursor capture's does not, a
// replay reported errors, or the two builds saw different captures.
func report(w io.Writer, with, without *Results) int {
	byName := map[string]Output{}
	for _, o := range without.Outputs {
		byName[o.Capture] = o
	}
	var identical, cursorDiffers, cursorSame int
	var failures, notes []string
	for _, a := range with.Outputs {
		b, ok := byName[a.Capture]
		if !ok {
			failures = append(failures, a.Capture+": missing from the build without the Cursor adapter")
			continue
		}
		delete(byName, a.Capture)
		for _, o := range []Output{a, b} {
			if len(o.Errors) == 0 {
				continue
			}
			if isCursorCapture(o) {
				// A Cursor agent request sent while the client sends its own
				// next request can interleave either way in a live replay.
				notes = append(notes, fmt.Sprintf("%s: replay errors %v (Cursor capture, not compared)", o.Capture, o.Errors))
				continue
			}
			failures = append(failures, fmt.Sprintf("%s: replay errors %v", o.Capture, o.Errors))
		}
		d := cmp.Diff(b, a)
		switch {
		case isCursorCapture(a) && d == "":
			cursorSame++
		case isCursorCapture(a):
			cursorDiffers++
		case d == "":
			identical++
		default:
			failures = append(failures, a.Capture+": output differs with the Cursor adapter installed")
			fmt.Fprintf(w, "--- %s (-without +with Cursor adapter)\n%s\n", a.Capture, d)
		}
	}
	for name := range byName {
		failures = append(failures, name+": missing from the build with the Cursor adapter")
	}
	if cursorDiffers == 0 {
		failures = append(failures, "no Cursor capture changed with the Cursor adapter installed: the adapter was not exercised")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ADAPTER IDENTITY: non-Cursor output with and without the Cursor adapter")
	fmt.Fprintf(w, "  %-34s %d\n", "captures replayed", len(with.Outputs))
	fmt.Fprintf(w, "  %-34s %d\n", "non-Cursor, byte identical", identical)
	fmt.Fprintf(w, "  %-34s %d\n", "Cursor, changed by the adapter", cursorDiffers)
	fmt.Fprintf(w, "  %-34s %d\n", "Cursor, unchanged (no cursor/task)", cursorSame)
	for _, n := range notes {
		fmt.Fprintln(w, "  note: "+n)
	}
	fmt.Fprintf(w, "  %-34s %d\n", "failures", len(failures))
	for _, f := range failures {
		fmt.Fprintln(w, "    "+f)
	}
	fmt.Fprintf(w, "SUMMARY captures=%d identical=%d cursor=%d failures=%d\n", len(with.Outputs), identical, cursorDiffers, len(failures))
	if len(failures) > 0 {
		return 1
	}
	return 0
}

// sameFiles checks that two runs of one build produced the same output for
// every non-Cursor capture (the replay is deterministic there).
func sameFiles(w io.Writer, aPath, bPath string) int {
	a, err := load(aPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		return 2
	}
	b, err := load(bPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "identity:", err)
		return 2
	}
	byName := map[string]Output{}
	for _, o := range b.Outputs {
		byName[o.Capture] = o
	}
	code := 0
	for _, o := range a.Outputs {
		if isCursorCapture(o) {
			continue
		}
		if d := cmp.Diff(o, byName[o.Capture]); d != "" {
			fmt.Fprintf(w, "%s: two runs of one build differ (nondeterministic replay)\n%s\n", o.Capture, d)
			code = 1
		}
	}
	return code
}
