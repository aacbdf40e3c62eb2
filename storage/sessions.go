package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type sessionRow struct {
	bun.BaseModel `bun:"table:web_sessions,alias:ws"`

	IDHash    []byte          `bun:"id_hash,pk"`
	UserID    string          `bun:"user_id"`
	Data      json.RawMessage `bun:"data,type:jsonb"`
	CreatedAt time.Time       `bun:"created_at"`
	SeenAt    time.Time       `bun:"seen_at"`
	ExpiresAt time.Time       `bun:"expires_at"`
}

func encodeSessionData(d map[string]string) json.RawMessage {
	if d == nil {
		d = map[string]string{}
	}
	return domain.MustJSON(d)
}

// CreateSession implements domain.SessionStore.
func (db *DB) CreateSession(ctx context.Context, s domain.Session) error {
	row := &sessionRow{IDHash: s.IDHash, UserID: s.UserID, Data: encodeSessionData(s.Data), CreatedAt: ts(s.CreatedAt), SeenAt: ts(s.SeenAt), ExpiresAt: ts(s.ExpiresAt)}
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewInsert().Model(row).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionByHash implements domain.SessionStore.
func (db *DB) SessionByHash(ctx context.Context, hash []byte, now time.Time) (domain.Session, domain.User, error) {
	var row struct {
		sessionRow `bun:",extend"`
		owner
	}
	err := withOwner(db.bun.NewSelect().Model(&row), "ws").
		Where("ws.id_hash = ? AND ws.expires_at > ? AND NOT u.disabled", hash, ts(now)).Scan(ctx)
	if err != nil {
		return domain.Session{}, domain.User{}, fmt.Errorf("find session: %w", translate(err))
	}
	s := domain.Session{IDHash: row.IDHash, UserID: row.UserID, CreatedAt: row.CreatedAt.UTC(), SeenAt: row.SeenAt.UTC(), ExpiresAt: row.ExpiresAt.UTC()}
	if err := json.Unmarshal(row.Data, &s.Data); err != nil {
		return domain.Session{}, domain.User{}, fmt.Errorf("decode session: %w", err)
	}
	return s, row.user(row.UserID), nil
}

// TouchSession implements domain.SessionStore.
func (db *DB) TouchSession(ctx context.Context, hash []byte, seen, expires time.Time, data map[string]string) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := tx.NewUpdate().Model((*sessionRow)(nil)).
			Set("seen_at = ?", ts(seen)).Set("expires_at = ?", ts(expires)).Set("data = ?", encodeSessionData(data)).
			Where("id_hash = ?", hash).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
}

// DeleteSession implements domain.SessionStore.
func (db *DB) DeleteSession(ctx context.Context, hash []byte) error {
	_, err := db.deleteSessions(ctx, "id_hash = ?", hash)
	return err
}

// DeleteUserSessions implements domain.SessionStore.
func (db *DB) DeleteUserSessions(ctx context.Context, userID string) (int, error) {
	return db.deleteSessions(ctx, "user_id = ?", userID)
}

// DeleteExpiredSessions implements domain.SessionStore.
func (db *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	return db.deleteSessions(ctx, "expires_at <= ?", ts(now))
}

func (db *DB) deleteSessions(ctx context.Context, where string, arg any) (int, error) {
	var n int64
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*sessionRow)(nil)).Where(where, arg).Exec(ctx)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete sessions: %w", err)
	}
	return int(n), nil
}

type auditRow struct {
	bun.BaseModel `bun:"table:audit_log,alias:a"`

	ID         int64           `bun:"id,pk,autoincrement"`
	At         time.Time       `bun:"at"`
	ActorID    string          `bun:"actor_id"`
	ActorEmail string          `bun:"actor_email"`
	Action     string          `bun:"action"`
	Subject    string          `bun:"subject"`
	WorkflowID string          `bun:"workflow_id"`
	Data       json.RawMessage `bun:"data,type:jsonb"`
	Address    string          `bun:"address"`
}

// insert inserts the entry; its id is the database's to assign.
func (r *auditRow) insert(idb bun.IDB) *bun.InsertQuery {
	return idb.NewInsert().Model(r).ExcludeColumn("id")
}

func auditRowFrom(e domain.AuditEntry) *auditRow {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return &auditRow{At: ts(e.At), ActorID: e.ActorID, ActorEmail: e.ActorEmail, Action: e.Action, Subject: e.Subject, WorkflowID: e.WorkflowID, Data: data, Address: e.Address}
}

// auditFor is the audit row of e, a change to subject (a run or a
// suspension) of the given workflow, or nil without an entry. An empty
// Subject or WorkflowID in e becomes the one given.
func auditFor(e *domain.AuditEntry, subject, workflowID string) *auditRow {
	if e == nil {
		return nil
	}
	row := auditRowFrom(*e)
	row.Subject = cmp.Or(row.Subject, subject)
	row.WorkflowID = cmp.Or(row.WorkflowID, workflowID)
	return row
}

// addData sets the keys of extra in the row's data, an object; nothing
// without a row.
func (r *auditRow) addData(extra map[string]any) error {
	if r == nil {
		return nil
	}
	var data map[string]json.RawMessage // values kept as written
	if err := json.Unmarshal(r.Data, &data); err != nil {
		return fmt.Errorf("audit data of %s: %w", r.Action, err)
	}
	if data == nil {
		data = map[string]json.RawMessage{}
	}
	for k, v := range extra {
		data[k] = domain.MustJSON(v)
	}
	r.Data = domain.MustJSON(data)
	return nil
}

// insertAudit writes row, when there is one, in tx.
func insertAudit(ctx context.Context, tx bun.IDB, row *auditRow) error {
	if row == nil {
		return nil
	}
	_, err := row.insert(tx).Exec(ctx)
	return err
}

// addAudit adds row, when there is one, to the batch.
func (b *batch) addAudit(ctx context.Context, row *auditRow) error {
	if row == nil {
		return nil
	}
	if _, done, err := sqliteAudit.exec(ctx, b.db, b.tx, row); done {
		return err
	}
	return b.add(ctx, row.insert(b.tx))
}

// AppendAudit implements domain.AuditLog.
func (db *DB) AppendAudit(ctx context.Context, e domain.AuditEntry) error {
	row := auditRowFrom(e)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := row.insert(tx).Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("append audit entry %s: %w", e.Action, err)
	}
	return nil
}

// Audit implements domain.AuditLog: newest first, keyset-paginated on
// (at, id).
func (db *DB) Audit(ctx context.Context, f domain.AuditFilter) ([]domain.AuditEntry, string, error) {
	limit := clampLimit(f.Limit)
	var rows []auditRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("at DESC, id DESC").Limit(int64(limit + 1))
	if f.ActorEmail != "" {
		q.Where("actor_email = ?", f.ActorEmail)
	}
	if f.Action != "" {
		q.Where("action = ?", f.Action)
	}
	if len(f.Actions) > 0 {
		q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, a := range f.Actions {
				if prefix, ok := strings.CutSuffix(a, "*"); ok {
					q.WhereOr("action LIKE ? ESCAPE '\\'", escapeLike(prefix)+"%")
				} else {
					q.WhereOr("action = ?", a)
				}
			}
			return q
		})
	}
	if f.WorkflowID != "" {
		q.Where("workflow_id = ?", f.WorkflowID)
	}
	if !f.From.IsZero() {
		q.Where("at >= ?", ts(f.From))
	}
	if !f.To.IsZero() {
		q.Where("at < ?", ts(f.To))
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, "", &domain.ValidationError{Code: domain.CodeValidation, Message: "cursor is not one this server issued"}
		}
		q.Where("(at, id) < (?, ?)", at, n)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list audit log: %w", err)
	}
	rows, next := cutPage(rows, limit, func(r auditRow) string { return Cursor(r.At, strconv.FormatInt(r.ID, 10)) })
	out := make([]domain.AuditEntry, len(rows))
	for i, r := range rows {
		out[i] = domain.AuditEntry{ID: r.ID, At: r.At.UTC(), ActorID: r.ActorID, ActorEmail: r.ActorEmail, Action: r.Action, Subject: r.Subject, WorkflowID: r.WorkflowID, Data: r.Data, Address: r.Address}
	}
	return out, next, nil
}

var (
	_ domain.SessionStore = (*DB)(nil)
	_ domain.AuditLog     = (*DB)(nil)
)
