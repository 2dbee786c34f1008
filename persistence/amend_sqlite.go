package persistence

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"
)

// SQLite side of the migration procedures: the catalog probe and the
// table rebuild that makes a pre-amendment table execution-aware.

func (sqliteEngine) probe(ctx context.Context, q queryer) (tableShape, error) {
	sh := tableShape{columns: map[string]columnInfo{}}
	rows, err := q.QueryContext(ctx, `SELECT name, "notnull", type FROM pragma_table_info('task_session_subagents')`)
	if err != nil {
		return sh, err
	}
	for rows.Next() {
		var name, typ string
		var notNull int
		if err := rows.Scan(&name, &notNull, &typ); err != nil {
			rows.Close()
			return sh, err
		}
		sh.columns[name] = columnInfo{notNull: notNull != 0, dataType: strings.ToLower(typ)}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sh, err
	}
	sh.exists = len(sh.columns) > 0
	if !sh.exists {
		return sh, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT name, origin FROM pragma_index_list('task_session_subagents') WHERE "unique" = 1 AND partial = 0`)
	if err != nil {
		return sh, err
	}
	var idx []uniqueIndex
	for rows.Next() {
		var name, origin string
		if err := rows.Scan(&name, &origin); err != nil {
			rows.Close()
			return sh, err
		}
		u := uniqueIndex{index: name}
		if origin == "u" || origin == "pk" {
			u.constraint = name
		}
		idx = append(idx, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sh, err
	}
	for _, u := range idx {
		cols, err := q.QueryContext(ctx, `SELECT name FROM pragma_index_info(?) ORDER BY seqno`, u.index)
		if err != nil {
			return sh, err
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return sh, err
			}
			u.columns = append(u.columns, c)
		}
		cols.Close()
		sh.uniques = append(sh.uniques, u)
	}
	return sh, nil
}

// amend rebuilds the table in the final shape inside one IMMEDIATE
// transaction on a pinned writer connection, with foreign keys off for the
// copy (so an orphan row cannot poison it forever). Any error rolls back to
// the intact old shape. execution_since is written in the same transaction.
func (sqliteEngine) amend(ctx context.Context, s *Store, sh tableShape) (err error) {
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys=OFF`); err != nil {
		return err
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys=ON`); rerr != nil {
			// Never hand a connection without foreign keys back to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE via the writer DSN
	if err != nil {
		return err
	}
	defer tx.Rollback()

	if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS task_session_subagents_new`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, subagentsTableDDL(sqliteEngine{}, "task_session_subagents_new")); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.create"); err != nil {
		return err
	}
	// Copy every row, naming every column: the old execution id when the
	// column exists and is non-empty, else the sentinel; all else verbatim.
	src := make([]string, len(finalColumns))
	for i, c := range finalColumns {
		_, has := sh.columns[c]
		switch {
		case c == "agent_execution_id" && has:
			src[i] = `COALESCE(NULLIF(agent_execution_id, ''), 'unknown')`
		case c == "agent_execution_id":
			src[i] = `'unknown'`
		case has:
			src[i] = c
		default:
			src[i] = "NULL"
		}
	}
	copySQL := fmt.Sprintf(`INSERT INTO task_session_subagents_new (%s) SELECT %s FROM task_session_subagents`,
		strings.Join(finalColumns, ", "), strings.Join(src, ", "))
	if _, err := tx.ExecContext(ctx, copySQL); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.copy"); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE task_session_subagents`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `ALTER TABLE task_session_subagents_new RENAME TO task_session_subagents`); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.swap"); err != nil {
		return err
	}
	for _, q := range indexDDL {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	if err := s.failpoint("execution_identity.indexes"); err != nil {
		return err
	}
	var orphans int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_foreign_key_check('task_session_subagents')`).Scan(&orphans); err != nil {
		return err
	}
	if orphans > 0 {
		s.log.Warn("orphan rows kept by the execution-identity rebuild", "name", StepExecutionIdentity, "count", orphans)
	}
	if _, err := s.putKey(ctx, tx, KeyExecutionSince, keyText(s.now())); err != nil {
		return err
	}
	if err := s.failpoint("execution_identity.key"); err != nil {
		return err
	}
	return tx.Commit()
}

// widen has nothing to do on SQLite, whose INTEGER is 64-bit.
func (sqliteEngine) widen(context.Context, *Store) (bool, error) { return false, nil }

// zoneTimes has nothing to do on SQLite: its timestamps are UTC text.
func (sqliteEngine) zoneTimes(context.Context, *Store) (bool, error) { return false, nil }

// prepare has nothing to do on SQLite (json_valid is built in).
func (sqliteEngine) prepare(context.Context, *Store) error { return nil }
