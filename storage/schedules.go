package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

type scheduleRow struct {
	bun.BaseModel `bun:"table:schedules,alias:sc"`

	ID          string          `bun:"id,pk"`
	WorkflowID  string          `bun:"workflow_id"`
	Cron        string          `bun:"cron"`
	EveryMs     int64           `bun:"every_ms"`
	Timezone    string          `bun:"timezone"`
	Input       json.RawMessage `bun:"input,type:jsonb,nullzero"`
	Overlap     string          `bun:"overlap"`
	CatchUpMs   int64           `bun:"catch_up_ms"`
	Paused      bool            `bun:"paused"`
	Note        string          `bun:"note"`
	Source      string          `bun:"source"`
	Revision    int             `bun:"revision"`
	NextFireAt  *time.Time      `bun:"next_fire_at"`
	DueAt       *time.Time      `bun:"due_at"`
	BufferedAt  *time.Time      `bun:"buffered_at"`
	Attempt     int             `bun:"attempt"`
	LockedBy    *string         `bun:"locked_by"`
	LeaseUntil  *time.Time      `bun:"lease_until"`
	LastRunID   *string         `bun:"last_run_id"`
	LastFireAt  *time.Time      `bun:"last_fire_at"`
	LastOutcome string          `bun:"last_outcome"`
	CreatedBy   string          `bun:"created_by"`
	CreatedAt   time.Time       `bun:"created_at"`
	UpdatedAt   time.Time       `bun:"updated_at"`
	// LastRunStatus is read with a claim: the status of the last run.
	LastRunStatus *string `bun:"last_run_status,scanonly"`
}

type scheduleFireRow struct {
	bun.BaseModel `bun:"table:schedule_fires,alias:sf"`

	ScheduleID  string     `bun:"schedule_id,pk"`
	FireAt      time.Time  `bun:"fire_at,pk"`
	Outcome     string     `bun:"outcome"`
	RunID       *string    `bun:"run_id"`
	Count       int        `bun:"count"`
	Until       *time.Time `bun:"until"`
	Manual      bool       `bun:"manual"`
	RequestedBy string     `bun:"requested_by"`
	Message     string     `bun:"message"`
	RecordedAt  time.Time  `bun:"recorded_at"`
}

func scheduleRowFrom(s domain.Schedule) *scheduleRow {
	row := &scheduleRow{
		ID: s.ID, WorkflowID: s.WorkflowID, Cron: s.Cron, EveryMs: s.Every.Milliseconds(), Timezone: s.Timezone,
		Input: s.Input, Overlap: string(s.Overlap), CatchUpMs: s.CatchUpWindow.Milliseconds(), Paused: s.Paused, Note: s.Note,
		Source: cmp.Or(s.Source, "api"), Revision: s.Revision, NextFireAt: tsPtr(s.NextFireAt), DueAt: tsPtr(s.NextFireAt),
		BufferedAt: tsPtr(s.BufferedAt), LastFireAt: tsPtr(s.LastFireAt), LastOutcome: string(s.LastOutcome),
		CreatedBy: s.CreatedBy, CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt),
	}
	if row.Revision == 0 {
		row.Revision = 1
	}
	if s.LastRunID != "" {
		row.LastRunID = &s.LastRunID
	}
	return row
}

func (r *scheduleRow) toDomain() domain.Schedule {
	s := domain.Schedule{
		ScheduleSpec: domain.ScheduleSpec{
			ID: r.ID, WorkflowID: r.WorkflowID, Cron: r.Cron, Every: time.Duration(r.EveryMs) * time.Millisecond, Timezone: r.Timezone,
			Input: r.Input, Overlap: domain.Overlap(r.Overlap), CatchUpWindow: time.Duration(r.CatchUpMs) * time.Millisecond,
			Paused: r.Paused, Note: r.Note,
		},
		Source: r.Source, Revision: r.Revision, NextFireAt: utcOrZero(r.NextFireAt), BufferedAt: utcOrZero(r.BufferedAt),
		LastFireAt: utcOrZero(r.LastFireAt), LastOutcome: domain.FireOutcome(r.LastOutcome),
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Attempt: r.Attempt,
	}
	if r.LastRunID != nil {
		s.LastRunID = *r.LastRunID
	}
	if r.LockedBy != nil {
		s.LockedBy = *r.LockedBy
	}
	if r.LastRunStatus != nil {
		s.LastRunActive = !domain.RunStatus(*r.LastRunStatus).Terminal()
	}
	return s
}

func (r *scheduleFireRow) toDomain() domain.ScheduleFire {
	f := domain.ScheduleFire{ScheduleID: r.ScheduleID, At: r.FireAt.UTC(), Outcome: domain.FireOutcome(r.Outcome), Count: r.Count,
		Until: utcOrZero(r.Until), Manual: r.Manual, By: r.RequestedBy, Message: r.Message, RecordedAt: r.RecordedAt.UTC()}
	if r.RunID != nil {
		f.RunID = *r.RunID
	}
	return f
}

func tsPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := ts(t)
	return &v
}

func utcOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// CreateSchedule implements domain.ScheduleStore.
func (db *DB) CreateSchedule(ctx context.Context, s domain.Schedule, audit *domain.AuditEntry) (domain.Schedule, error) {
	row := scheduleRowFrom(s)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return &domain.ConflictError{Code: domain.CodeConflict, Message: "a schedule with the id " + s.ID + " exists already"}
		}
		return insertAudit(ctx, tx, auditFor(audit, s.ID, s.WorkflowID))
	})
	if err != nil {
		return domain.Schedule{}, fmt.Errorf("create schedule %s: %w", s.ID, translate(err))
	}
	return row.toDomain(), nil
}

// UpdateSchedule implements domain.ScheduleStore.
func (db *DB) UpdateSchedule(ctx context.Context, s domain.Schedule, replan bool, audit *domain.AuditEntry) (domain.Schedule, error) {
	row := scheduleRowFrom(s)
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return db.updateSchedule(ctx, tx, row, replan, audit)
	})
	if err != nil {
		return domain.Schedule{}, fmt.Errorf("update schedule %s: %w", s.ID, translate(err))
	}
	return row.toDomain(), nil
}

// updateSchedule writes row's spec, and its next fire when replan is
// set, over the schedule of its id and revision, as revision+1, with the
// claim on it voided. A fire kept for the end of the last run that the
// new timing drops is recorded skipped.
func (db *DB) updateSchedule(ctx context.Context, tx bun.IDB, row *scheduleRow, replan bool, audit *domain.AuditEntry) error {
	columns := []string{"workflow_id", "cron", "every_ms", "timezone", "input", "overlap", "catch_up_ms", "paused", "note", "source", "updated_at"}
	if replan {
		columns = append(columns, "next_fire_at", "due_at", "buffered_at")
	}
	var got []scheduleRow
	err := tx.NewUpdate().Model(row).Column(columns...).
		Set("revision = revision + 1").Set("attempt = attempt + 1").Set("locked_by = NULL").Set("lease_until = NULL").
		Where("id = ? AND revision = ?", row.ID, row.Revision).Returning("*").Scan(ctx, &got)
	if err != nil && !isNoRows(err) {
		return err
	}
	if len(got) == 0 {
		if exists, err := tx.NewSelect().Model((*scheduleRow)(nil)).Where("id = ?", row.ID).Exists(ctx); err != nil {
			return err
		} else if !exists {
			return domain.ErrNotFound
		}
		return &domain.ConflictError{Code: domain.CodeConflict, Message: "the schedule " + row.ID + " was changed meanwhile; read it again"}
	}
	*row = got[0]
	if replan && row.BufferedAt == nil {
		if _, err := tx.NewUpdate().Model((*scheduleFireRow)(nil)).Set("outcome = ?", domain.FireSkipped).
			Set("message = ?", "the schedule was paused or its rule changed before the last run ended").
			Where("schedule_id = ? AND outcome = ?", row.ID, domain.FireBuffered).Exec(ctx); err != nil {
			return err
		}
	}
	return insertAudit(ctx, tx, auditFor(audit, row.ID, row.WorkflowID))
}

// DeleteSchedule implements domain.ScheduleStore.
func (db *DB) DeleteSchedule(ctx context.Context, id string, audit *domain.AuditEntry) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var wf string
		if err := tx.NewDelete().Model((*scheduleRow)(nil)).Where("id = ?", id).Returning("workflow_id").Scan(ctx, &wf); err != nil {
			return err
		}
		return insertAudit(ctx, tx, auditFor(audit, id, wf))
	})
	if err != nil {
		return fmt.Errorf("delete schedule %s: %w", id, translate(err))
	}
	return nil
}

// Schedule implements domain.ScheduleStore.
func (db *DB) Schedule(ctx context.Context, id string) (domain.Schedule, error) {
	row := new(scheduleRow)
	if err := db.bun.NewSelect().Model(row).Where("id = ?", id).Scan(ctx); err != nil {
		return domain.Schedule{}, fmt.Errorf("schedule %s: %w", id, translate(err))
	}
	return row.toDomain(), nil
}

// Schedules implements domain.ScheduleStore: by id, a page at a time.
func (db *DB) Schedules(ctx context.Context, f domain.ScheduleFilter) ([]domain.Schedule, string, error) {
	limit := clampLimit(f.Limit)
	var rows []scheduleRow
	q := db.bun.NewSelect().Model(&rows).OrderExpr("id").Limit(int64(limit) + 1)
	if f.WorkflowID != "" {
		q.Where("workflow_id = ?", f.WorkflowID)
	}
	if f.Cursor != "" {
		q.Where("id > ?", f.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("list schedules: %w", err)
	}
	rows, next := cutPage(rows, limit, func(r scheduleRow) string { return r.ID })
	out := make([]domain.Schedule, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, next, nil
}

// ScheduleFires implements domain.ScheduleStore.
func (db *DB) ScheduleFires(ctx context.Context, id string, limit int) ([]domain.ScheduleFire, error) {
	var rows []scheduleFireRow
	if err := db.bun.NewSelect().Model(&rows).Where("schedule_id = ?", id).OrderExpr("fire_at DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("fires of schedule %s: %w", id, err)
	}
	out := make([]domain.ScheduleFire, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// claimSchedules marks the due schedules claimed and returns them with
// their last run's status, in one statement; on PostgreSQL SKIP LOCKED
// lets servers claim disjoint schedules at once.
const claimSchedules = `UPDATE schedules SET attempt = attempt + 1, locked_by = ?, lease_until = ?
WHERE id IN (SELECT id FROM schedules WHERE due_at <= ? AND (lease_until IS NULL OR lease_until < ?)
	ORDER BY due_at LIMIT ?%s)
RETURNING *, (SELECT r.status FROM runs AS r WHERE r.id = schedules.last_run_id) AS last_run_status`

// ClaimSchedules implements domain.ScheduleStore.
func (db *DB) ClaimSchedules(ctx context.Context, worker string, now time.Time, lease time.Duration, limit int) ([]domain.Schedule, error) {
	now = ts(now)
	lock := ""
	if db.dialect == Postgres {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var rows []scheduleRow
	err := db.bun.NewRaw(fmt.Sprintf(claimSchedules, lock), worker, now.Add(lease), now, now, limit).Scan(ctx, &rows)
	if err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("claim schedules: %w", err)
	}
	out := make([]domain.Schedule, len(rows))
	for i := range rows {
		out[i] = rows[i].toDomain()
	}
	return out, nil
}

// NextScheduleDue implements domain.ScheduleStore. A schedule claimed by
// a server until after now is not due for the others.
func (db *DB) NextScheduleDue(ctx context.Context, now time.Time) (time.Time, error) {
	var at []time.Time
	err := db.bun.NewSelect().Model((*scheduleRow)(nil)).Column("due_at").
		Where("due_at IS NOT NULL AND (lease_until IS NULL OR lease_until < ?)", ts(now)).OrderExpr("due_at").Limit(1).Scan(ctx, &at)
	if err != nil && !isNoRows(err) {
		return time.Time{}, fmt.Errorf("next schedule due: %w", err)
	}
	if len(at) == 0 {
		return time.Time{}, nil
	}
	return at[0].UTC(), nil
}

// ReplaceWorkflowSchedules implements domain.ScheduleStore.
func (db *DB) ReplaceWorkflowSchedules(ctx context.Context, workflowID string, want []domain.Schedule, audit *domain.AuditEntry) error {
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var have []scheduleRow
		if err := tx.NewSelect().Model(&have).Where("workflow_id = ? AND source = ?", workflowID, domain.ScheduleFromWorkflow).Scan(ctx); err != nil {
			return err
		}
		kept := map[string]scheduleRow{}
		for _, r := range have {
			kept[r.ID] = r
		}
		for _, s := range want {
			s.Source = domain.ScheduleFromWorkflow
			row := scheduleRowFrom(s)
			old, ok := kept[s.ID]
			delete(kept, s.ID)
			switch {
			case !ok:
				res, err := tx.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					return &domain.ConflictError{Code: domain.CodeConflict, Message: "the document's schedule " + s.ID + " has the id of a schedule made otherwise"}
				}
			default:
				have := old.toDomain()
				s.Paused = have.Paused // its admins' to say
				if have.Same(s.ScheduleSpec) {
					continue
				}
				replan := !have.SameTiming(s.ScheduleSpec)
				if replan && have.Paused {
					s.NextFireAt = time.Time{}
				}
				row = scheduleRowFrom(s)
				row.Revision = old.Revision
				if err := db.updateSchedule(ctx, tx, row, replan, nil); err != nil {
					return err
				}
			}
		}
		for id := range kept {
			if _, err := tx.NewDelete().Model((*scheduleRow)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
				return err
			}
		}
		return insertAudit(ctx, tx, auditFor(audit, workflowID, workflowID))
	})
	if err != nil {
		return fmt.Errorf("replace the schedules of workflow %s: %w", workflowID, translate(err))
	}
	return nil
}

// fireIn commits a schedule's fires in tx: the schedule's next fire,
// fenced on the claim (or, for a manual fire, its last outcome only), the
// runs the fires start (each keyed by its fire time, so a fire starts at
// most one run whatever happens), the fires' records and an audit entry
// for each run. It returns the fires with their runs, and the runs it
// created.
func (db *DB) fireIn(ctx context.Context, tx bun.IDB, req domain.FireRequest) ([]domain.ScheduleFire, []string, error) {
	if len(req.Fires) == 0 && req.Attempt == 0 {
		return nil, nil, nil
	}
	now := ts(req.Now)
	q := tx.NewUpdate().Model((*scheduleRow)(nil)).Where("id = ?", req.ScheduleID)
	if last := lastFire(req.Fires); last != nil {
		q.Set("last_fire_at = ?", ts(last.At)).Set("last_outcome = ?", string(last.Outcome))
	}
	if run := req.StartedRun(); run != "" {
		q.Set("last_run_id = ?", run)
	}
	if req.Attempt > 0 {
		q.Set("next_fire_at = ?", tsPtr(req.NextFireAt)).Set("due_at = ?", tsPtr(req.DueAt)).Set("buffered_at = ?", tsPtr(req.BufferedAt)).
			Set("locked_by = NULL").Set("lease_until = NULL").
			Where("attempt = ? AND locked_by = ?", req.Attempt, req.Worker)
	} else {
		q.Set("updated_at = updated_at")
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return nil, nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if req.Attempt > 0 {
			return nil, nil, domain.ErrStale
		}
		return nil, nil, domain.ErrNotFound
	}
	if err := db.fail("fire.after_schedule"); err != nil {
		return nil, nil, err
	}
	var created []string
	runIDs := make([]string, len(req.Fires))
	b := db.newBatch(tx)
	for i, f := range req.Fires {
		if f.Run == nil {
			continue
		}
		row := newRunRow(*f.Run)
		ok, err := db.createRunIn(ctx, tx, row, *f.Run)
		var ve *domain.ValidationError
		if err != nil && !(errors.As(err, &ve) && ve.Code == domain.CodeIdempotencyMismatch) {
			return nil, nil, err
		}
		runIDs[i] = row.ID // an earlier run of the same fire time, when not created
		if ok {
			created = append(created, row.ID)
			f.RunID = row.ID
			if err := b.addAudit(ctx, fireAudit(f, req.ScheduleID, row.WorkflowID, now)); err != nil {
				return nil, nil, err
			}
		}
	}
	if last := lastStarted(req, runIDs); last != "" && last != req.StartedRun() {
		// The newest fire's run existed already (its key was taken): the
		// schedule's last run is that one, not the id planned for it.
		if _, err := tx.NewUpdate().Model((*scheduleRow)(nil)).Set("last_run_id = ?", last).Where("id = ?", req.ScheduleID).Exec(ctx); err != nil {
			return nil, nil, err
		}
	}
	fires, rows := fireRecords(req, runIDs, now)
	if len(rows) > 0 {
		if err := b.add(ctx, insertFireRows(tx, rows)); err != nil {
			return nil, nil, err
		}
	}
	return fires, created, b.flush(ctx)
}

// fireRecords are req's fires as recorded at now, each with its run (of
// runIDs, by fire), and their rows.
func fireRecords(req domain.FireRequest, runIDs []string, now time.Time) ([]domain.ScheduleFire, []scheduleFireRow) {
	fires := make([]domain.ScheduleFire, len(req.Fires))
	rows := make([]scheduleFireRow, len(req.Fires))
	for i, f := range req.Fires {
		f.ScheduleID, f.RecordedAt, f.Run, f.RunID = req.ScheduleID, now, nil, runIDs[i]
		fires[i] = f
		rows[i] = scheduleFireRow{ScheduleID: req.ScheduleID, FireAt: ts(f.At), Outcome: string(f.Outcome), Count: max(f.Count, 1),
			Until: tsPtr(f.Until), Manual: f.Manual, RequestedBy: f.By, Message: f.Message, RecordedAt: now}
		if f.RunID != "" {
			rows[i].RunID = &fires[i].RunID
		}
	}
	return fires, rows
}

// insertFireRows inserts fire records. A buffered fire's record becomes
// started when its run starts; no other record changes once written.
func insertFireRows(tx bun.IDB, rows []scheduleFireRow) *bun.InsertQuery {
	return tx.NewInsert().Model(&rows).
		On("CONFLICT (schedule_id, fire_at) DO UPDATE").
		Set("outcome = EXCLUDED.outcome, run_id = EXCLUDED.run_id, message = EXCLUDED.message, recorded_at = EXCLUDED.recorded_at").
		Where("sf.outcome = ?", domain.FireBuffered)
}

// lastStarted is the run of the newest of req's fires that started one,
// of runIDs (by fire); "" when none did.
func lastStarted(req domain.FireRequest, runIDs []string) string {
	for i := len(req.Fires) - 1; i >= 0; i-- {
		if req.Fires[i].Run != nil {
			return runIDs[i]
		}
	}
	return ""
}

func lastFire(fires []domain.ScheduleFire) *domain.ScheduleFire {
	if len(fires) == 0 {
		return nil
	}
	return &fires[len(fires)-1]
}

// fireAudit is the audit entry of a run a fire started: in the
// schedule's name, or, for a manual fire, its person's.
func fireAudit(f domain.ScheduleFire, scheduleID, workflowID string, now time.Time) *auditRow {
	data := map[string]any{"schedule": scheduleID, "scheduledAt": f.At.UTC().Format(time.RFC3339Nano), "via": "schedule"}
	e := domain.AuditEntry{At: now, ActorID: domain.ScheduleStarterPrefix + scheduleID, Action: "run.start", Subject: f.RunID, WorkflowID: workflowID}
	if f.Manual {
		e.ActorID, e.ActorEmail, data["manual"] = f.ByID, f.By, true
	}
	e.Data = domain.MustJSON(data)
	return auditRowFrom(e)
}

// fire commits a schedule's fires in a transaction of their own.
func (db *DB) fire(ctx context.Context, req domain.FireRequest) domain.Applied {
	var fires []domain.ScheduleFire
	var created []string
	err := db.inTx(ctx, func(ctx context.Context, tx bun.Tx) (err error) {
		fires, created, err = db.fireIn(ctx, tx, req)
		return err
	})
	if err != nil {
		return domain.Applied{Err: describeFire(req, err)}
	}
	db.fired(created)
	return firedApplied(fires)
}

func firedApplied(fires []domain.ScheduleFire) domain.Applied {
	a := domain.Applied{Fires: fires}
	for _, f := range fires {
		if f.RunID != "" {
			a.Run.ID = f.RunID
		}
	}
	return a
}

// fired wakes workers for the first jobs of the runs fires created and
// reports the runs.
func (db *DB) fired(created []string) {
	for _, id := range created {
		db.runCreated(id, nil)
	}
}

func describeFire(req domain.FireRequest, err error) error {
	return fmt.Errorf("fire schedule %s: %w", req.ScheduleID, translate(err))
}

// DeleteScheduleFires deletes up to limit fire records written before
// before (the runs they name are past the same retention) and says how
// many it deleted.
func (db *DB) DeleteScheduleFires(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := db.bun.NewDelete().Model((*scheduleFireRow)(nil)).
		Where("(schedule_id, fire_at) IN (SELECT schedule_id, fire_at FROM schedule_fires WHERE recorded_at < ? LIMIT ?)", ts(before), limit).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete schedule fires: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
