package storage

import (
	"context"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// hotFireSchedules moves claimed schedules on to their next fire, each
// fenced on its claim, and returns those whose claim held: one statement
// for a batch's schedules, as fireIn's update is for one.
const hotFireSchedules = `UPDATE schedules AS s SET next_fire_at = v.next, due_at = v.due, buffered_at = v.buffered,
	locked_by = NULL, lease_until = NULL,
	last_fire_at = COALESCE(v.last_at, s.last_fire_at), last_outcome = COALESCE(v.last_outcome, s.last_outcome),
	last_run_id = COALESCE(v.last_run, s.last_run_id)
FROM unnest($1::text[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::text[], $9::text[])
	AS v (id, attempt, worker, next, due, buffered, last_at, last_outcome, last_run)
WHERE s.id = v.id AND s.attempt = v.attempt AND s.locked_by = v.worker
RETURNING s.id`

// fireAll applies the claimed fires of the batch at fires, set based on
// PostgreSQL: one update moves every schedule whose claim held to its next
// fire; the runs of their fires join the batch's new runs; their records
// and audit entries go with the batch's other writes. A fire whose claim
// was taken over is refused (ErrStale) and changes nothing.
func (s *setWriter) fireAll(ctx context.Context, batch []domain.Transition, fires []int, out []domain.Applied) error {
	if len(fires) == 0 {
		return nil
	}
	n := len(fires)
	id, attempt, worker, lastOutcome, lastRun := make([]string, n), make([]int, n), make([]string, n), make([]*string, n), make([]*string, n)
	next, due, buffered, lastAt := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
	for k, i := range fires {
		r := batch[i].Fire
		id[k], attempt[k], worker[k] = r.ScheduleID, r.Attempt, r.Worker
		next[k], due[k], buffered[k] = tsPtr(r.NextFireAt), tsPtr(r.DueAt), tsPtr(r.BufferedAt)
		if last := lastFire(r.Fires); last != nil {
			lastAt[k], lastOutcome[k] = tsPtr(last.At), (*string)(&last.Outcome)
		}
		if run := r.StartedRun(); run != "" {
			lastRun[k] = &run
		}
	}
	if err := s.b.flush(ctx); err != nil {
		return err
	}
	var held []string
	if err := s.db.hotScan(ctx, s.tx, &held, hotFireSchedules, id, attempt, worker, next, due, buffered, lastAt, lastOutcome, lastRun); err != nil && !isNoRows(err) {
		return err
	}
	holds := make(map[string]bool, len(held))
	for _, h := range held {
		holds[h] = true
	}
	// The runs of the fires whose claim held, all at once.
	var nrs []domain.NewRun
	var of []fired
	for _, i := range fires {
		r := batch[i].Fire
		if !holds[r.ScheduleID] {
			out[i].Err = describeFire(*r, domain.ErrStale)
			continue
		}
		for f, fire := range r.Fires {
			if fire.Run != nil {
				nrs = append(nrs, *fire.Run)
				of = append(of, fired{i, f})
			}
		}
	}
	rows, inserted, err := s.startRuns(ctx, nrs)
	if err != nil {
		return err
	}
	runIDs := map[int][]string{}
	var taken []fired // fires whose run exists already
	for k, at := range of {
		ids := runIDs[at.t]
		if ids == nil {
			ids = make([]string, len(batch[at.t].Fire.Fires))
			runIDs[at.t] = ids
		}
		ids[at.f] = rows[k].ID
		if !inserted[k] {
			taken = append(taken, at)
		}
	}
	if err := s.earlierRuns(ctx, batch, taken, func(at fired, run string) { runIDs[at.t][at.f] = run }); err != nil {
		return err
	}
	var records []scheduleFireRow
	var audit []*auditRow
	for k, at := range of {
		if inserted[k] {
			r := batch[at.t].Fire
			f := r.Fires[at.f]
			f.RunID = rows[k].ID
			audit = append(audit, fireAudit(f, r.ScheduleID, rows[k].WorkflowID, ts(r.Now)))
		}
	}
	if len(audit) > 0 {
		if err := s.b.hot(ctx, hotInsertAudit, auditArrays(audit)...); err != nil {
			return err
		}
	}
	for _, i := range fires {
		r := batch[i].Fire
		if !holds[r.ScheduleID] {
			continue
		}
		ids := runIDs[i]
		if ids == nil {
			ids = make([]string, len(r.Fires))
		}
		recorded, rows := fireRecords(*r, ids, ts(r.Now))
		out[i] = firedApplied(recorded)
		records = append(records, rows...)
	}
	if len(records) == 0 {
		return nil
	}
	return s.b.hot(ctx, hotInsertFires, fireArrays(records)...)
}

// hotInsertFires is insertFireRows over arrays, prepared once.
const hotInsertFires = `INSERT INTO schedule_fires AS sf (schedule_id, fire_at, outcome, run_id, count, until, manual, requested_by, message, recorded_at)
SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::bool[], $8::text[], $9::text[], $10::timestamptz[])
ON CONFLICT (schedule_id, fire_at) DO UPDATE SET outcome = EXCLUDED.outcome, run_id = EXCLUDED.run_id, message = EXCLUDED.message,
	recorded_at = EXCLUDED.recorded_at
WHERE sf.outcome = 'buffered'` // domain.FireBuffered

func fireArrays(rows []scheduleFireRow) []any {
	n := len(rows)
	id, at, outcome, run, count, until, manual, by, msg, rec := make([]string, n), make([]time.Time, n), make([]string, n), make([]*string, n),
		make([]int, n), make([]*time.Time, n), make([]bool, n), make([]string, n), make([]string, n), make([]time.Time, n)
	for k, r := range rows {
		id[k], at[k], outcome[k], run[k], count[k], until[k] = r.ScheduleID, r.FireAt, r.Outcome, r.RunID, r.Count, r.Until
		manual[k], by[k], msg[k], rec[k] = r.Manual, r.RequestedBy, r.Message, r.RecordedAt
	}
	return []any{id, at, outcome, run, count, until, manual, by, msg, rec}
}

// hotInsertAudit inserts audit entries over arrays, prepared once.
const hotInsertAudit = `INSERT INTO audit_log (at, actor_id, actor_email, action, subject, workflow_id, data, address)
SELECT v.at, v.actor_id, v.actor_email, v.action, v.subject, v.workflow_id, v.data::jsonb, v.address
FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
	AS v (at, actor_id, actor_email, action, subject, workflow_id, data, address)`

func auditArrays(rows []*auditRow) []any {
	n := len(rows)
	at, actor, email, action, subject, wf, data, addr := make([]time.Time, n), make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for k, r := range rows {
		at[k], actor[k], email[k], action[k], subject[k], wf[k], data[k], addr[k] = r.At, r.ActorID, r.ActorEmail, r.Action, r.Subject, r.WorkflowID, string(r.Data), r.Address
	}
	return []any{at, actor, email, action, subject, wf, data, addr}
}

// fired is a fire of a batch's transition: its index in the batch, and
// in the transition's fires.
type fired struct{ t, f int }

// earlierRuns finds the runs that fires at taken started before (their
// idempotency key was taken: a person's Run now in the same millisecond
// as a fire, or a fire time planned again after its schedule was
// changed), and
// hands each to found; the schedule's last run is set to it where it was
// the fire's.
func (s *setWriter) earlierRuns(ctx context.Context, batch []domain.Transition, taken []fired, found func(fired, string)) error {
	for _, at := range taken {
		r := batch[at.t].Fire
		nr := r.Fires[at.f].Run
		var id string
		err := s.tx.NewSelect().Model((*runRow)(nil)).Column("id").
			Where("workflow_id = ? AND started_by = ? AND idempotency_key = ?", nr.WorkflowID, nr.StartedBy.ID, nr.IdempotencyKey).Scan(ctx, &id)
		if err != nil {
			return err
		}
		found(at, id)
		if r.StartedRun() == nr.ID {
			if _, err := s.tx.NewUpdate().Model((*scheduleRow)(nil)).Set("last_run_id = ?", id).Where("id = ?", r.ScheduleID).Exec(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
