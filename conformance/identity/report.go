package main

import (
	"errors"
	"fmt"
	"io"

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
	var identical, cursorDiffers int
	var failures []string
	for _, a := range with.Outputs {
		b, ok := byName[a.Capture]
		if !ok {
			failures = append(failures, a.Capture+": missing from the build without the Cursor adapter")
			continue
		}
		delete(byName, a.Capture)
		for _, o := range []Output{a, b} {
			if len(o.Errors) > 0 {
				failures = append(failures, fmt.Sprintf("%s: replay errors %v", o.Capture, o.Errors))
			}
		}
		d := cmp.Diff(b, a)
		switch {
		case isCursorCapture(a) && d == "":
			failures = append(failures, a.Capture+": a Cursor capture gave identical output, so the Cursor adapter was not exercised")
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
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ADAPTER IDENTITY: non-Cursor output with and without the Cursor adapter")
	fmt.Fprintf(w, "  %-34s %d\n", "captures replayed", len(with.Outputs))
	fmt.Fprintf(w, "  %-34s %d\n", "non-Cursor, byte identical", identical)
	fmt.Fprintf(w, "  %-34s %d\n", "Cursor, differing as expected", cursorDiffers)
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
