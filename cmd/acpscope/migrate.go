package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/safetext"
	"github.com/kdlbs/acp-go-sdk/persistence"

	"github.com/kdlbs/acp-go-sdk/cmd/acpscope/internal/session"
)

// cmdMigrate implements `acpscope migrate [--dry-run] [--db DSN]`: bring
// the database's schema up to date, or with --dry-run print the statements
// that would run, without running them (the database is opened read-only).
// A step that fails or refuses exits 1.
func cmdMigrate(ctx context.Context, e env, args []string) error {
	fs := newFlagSet("migrate", e.stderr)
	dsn := fs.String("db", "", "database (default: $ACPSCOPE_DB, else the embedded SQLite database)")
	dry := fs.Bool("dry-run", false, "print the statements the migration would run, and run none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("migrate takes no arguments")
	}
	if *dsn == "" {
		var err error
		if *dsn, err = defaultDSN(!*dry); err != nil {
			return err
		}
	}
	if *dry {
		plan, err := persistence.PlanMigration(ctx, *dsn, storeOptions()...)
		if err != nil {
			return fmt.Errorf("database: %w", err)
		}
		if plan.Empty() {
			fmt.Fprintln(e.stdout, "-- nothing to do: the database is up to date")
			return nil
		}
		// The plan quotes the host's own definitions: its text is the
		// database's, so it passes the sanitiser (line ends kept).
		out := safetext.NewWriter(e.stdout)
		fmt.Fprint(out, plan.String())
		if err := out.Close(); err != nil {
			return err
		}
		return refusals(plan.Refusals)
	}
	// Open runs one pass (its WARN records go nowhere: the report below
	// says the same); a second pass reports each step.
	s, err := persistence.Open(ctx, *dsn, storeOptions(persistence.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))...)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer s.Close()
	failed := failedSteps(s.Migrate(ctx))
	if len(failed) == 0 {
		fmt.Fprintln(e.stdout, "the database is up to date")
	}
	return refusals(failed)
}

// failedSteps are the steps of rep that failed or refused.
func failedSteps(rep persistence.MigrationReport) []persistence.StepResult {
	var failed []persistence.StepResult
	for _, st := range rep.Steps {
		if st.Err != nil {
			failed = append(failed, st)
		}
	}
	return failed
}

// refusals turns failed or refused migration steps into the command's
// error (exit 1), one step per line.
func refusals(steps []persistence.StepResult) error {
	if len(steps) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", session.ErrTurn, migrationFailure(steps))
}

// migrationFailure is the message naming each failed or refused step, the
// same for migrate and for the run and replay that refuse to start.
func migrationFailure(steps []persistence.StepResult) string {
	msg := "migration incomplete:"
	for _, st := range steps {
		msg += fmt.Sprintf("\n  %s: %v", st.Name, st.Err)
	}
	return msg
}
