package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kdlbs/acp-go-sdk/adapter/cursor/cli"
	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
	"github.com/kdlbs/acp-go-sdk/persistence"
)

// cmdHealth implements `acpscope health [--db DSN]`: the persistence
// health check, with shortfall and excess kept apart. An unhealthy report
// exits 1.
func cmdHealth(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("health", e.stderr)
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("health takes no arguments")
	}
	// Incremental when the store keeps its state (a writing store builds
	// it); health opens read-only, so without one it reads everything.
	s, err := openStoreReadOnly(ctx, *dsn, persistence.WithIncrementalHealth(time.Hour))
	if err != nil {
		return err
	}
	defer s.Close()
	h, err := s.Health(ctx)
	if err != nil {
		return fmt.Errorf("%w: health check: %v", session.ErrTurn, err)
	}
	// What the database reports passes the sanitiser.
	w := safetext.NewWriter(e.stdout)
	defer w.Close()
	fmt.Fprintf(w, "engine:            %s\n", s.Engine())
	fmt.Fprintf(w, "activation:        %s\n", h.State)
	fmt.Fprintf(w, "capture since:     %s\n", timeOrNone(h.CaptureSince))
	fmt.Fprintf(w, "backfill through:  %s\n", timeOrNone(h.BackfillThrough))
	fmt.Fprintf(w, "execution since:   %s\n", timeOrNone(h.ExecutionSince))
	fmt.Fprintf(w, "execution ids:     %s\n", map[bool]string{true: "reliable", false: "not reliable (amendment not applied)"}[h.ExecutionIDsReliable])
	if h.NoPreCaptureCoverage {
		fmt.Fprintln(w, "pre-capture:       no coverage (history had nothing to backfill)")
	}
	if !h.Compared {
		fmt.Fprintln(w, "comparison:        not run (no valid capture_since)")
	} else {
		fmt.Fprintf(w, "shortfall:         %d (expected subagents with no stored context)\n", h.Shortfall)
		fmt.Fprintf(w, "excess:            %d (stored contexts with no message; attribution only)\n", h.Excess)
		fmt.Fprintf(w, "collisions:        %d\n", h.Collisions)
		fmt.Fprintf(w, "last observed:     %s\n", timeOrNone(h.MaxObserved))
		if h.Incremental {
			fmt.Fprintln(w, "method:            incremental (the stored counts, and what is newer read in full)")
		} else {
			fmt.Fprintln(w, "method:            full scan (the store keeps no incremental state for this capture; health opens read-only and builds none)")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(h.UnconfirmedWriters)) {
		fmt.Fprintf(w, "writer:            %s %s (its cards are not confirmed stored)\n", name, h.UnconfirmedWriters[name])
	}
	if h.Problem != "" {
		fmt.Fprintf(w, "problem:           %s\n", h.Problem)
	}
	if !h.Healthy() {
		fmt.Fprintln(w, "status:            UNHEALTHY")
		return fmt.Errorf("%w: the health check found a problem", session.ErrTurn)
	}
	fmt.Fprintln(w, "status:            healthy")
	return nil
}

func timeOrNone(t *time.Time) string {
	if t == nil {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// cmdCursor implements `acpscope cursor doctor [--json]`: which Cursor CLI
// candidates exist, which one is compatible and what to do otherwise. The
// report never shows an executable's path.
func cmdCursor(ctx context.Context, e env, args []string) error {
	if len(args) == 0 || args[0] != "doctor" {
		return fmt.Errorf("usage: acpscope cursor doctor [--json]")
	}
	fs := newFlagSet("cursor doctor", e.stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	d := &cli.Discoverer{}
	entry, _ := d.Catalog(ctx)
	report := struct {
		Capability cli.BackendCapability `json:"cursor_backend"`
		Catalog    cli.CatalogEntry      `json:"cursor"`
	}{cli.HealthCapability(), entry}
	if *asJSON {
		data, err := json.MarshalIndent(report, "", "  ")
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(safetext.JSON(append(data, '\n')))
		return err
	}
	// What the candidate programs reported passes the sanitiser.
	w := safetext.NewWriter(e.stdout)
	defer w.Close()
	fmt.Fprintf(w, "backend contract:  version %d, instructions via %s\n", report.Capability.Version, report.Capability.InstructionChannel)
	for _, c := range entry.Candidates {
		line := fmt.Sprintf("candidate %-12s (%s): %s", c.Name, c.Source, c.Status)
		if c.Version != "" {
			line += ", version " + c.Version
		}
		if len(c.Missing) > 0 {
			line += fmt.Sprintf(", missing flags %v", c.Missing)
		}
		if c.Reason != "" {
			line += " — " + c.Reason
		}
		fmt.Fprintln(w, line)
	}
	if entry.Available {
		fmt.Fprintf(w, "cursor available:  yes (%s %s)\n", entry.Executable, entry.Version)
		return nil
	}
	fmt.Fprintf(w, "cursor available:  no — %s\n", entry.Reason)
	for _, a := range entry.Actions {
		fmt.Fprintf(w, "  to do: %s\n", a.Message)
	}
	return nil
}
