package storage

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/tollgatehq/tollgate/domain"
)

// The set writer applies a batch's starts, step commits and resumes on
// PostgreSQL with one statement for each kind of row, whatever the batch's
// size: it inserts every new run, loads what the others decide from (every job ended and run locked in one
// statement, every resumed suspension and its run in another), inserts
// every pause and counts every run's outstanding work in a third, resumes
// every suspension in a fourth, decides each transition in Go with the
// rules the lone path uses, claims every handed-off job in a fifth, and
// sends the rest (events, runs, audit, mail, notifications) in one message.
// A batch's round trips no longer grow with its size, nor does the
// database's parsing and planning, which on the lone path was a third of
// its time. See Apply for what it leaves to the savepoint path.

// setWriter gathers the writes that the set path makes once for the batch.
type setWriter struct {
	db *DB
	tx bun.Tx
	// b takes each transition's writes that need no gathering (jobs,
	// audit, mail, hook events); it is flushed with the rest.
	b      *batch
	events []*eventRow
	jobs   []*jobRow // new runs' first jobs
	runs   []setRun
	// ended are the runs the batch's step commits finish, without
	// subscribers: their other waits are cancelled and their queued work
	// dropped together, as cancelOutstanding does for one.
	ended   []string
	changed []string
	claims  []setClaim
	after   []func()
}

// setRun is a run row the batch writes back; result says that it carries
// the run's output and error too (a step's commit may set them).
type setRun struct {
	row    *runRow
	result bool
}

// setClaim is a job inserted claimed by the worker of a handoff; handOver
// gives it to the worker once the claim has succeeded.
type setClaim struct {
	job      *jobRow
	h        *domain.Handoff
	handOver func()
}

// loadedPause is what the set writer's insert of a commit's pause found:
// whether the row was inserted, and the run's outstanding work before it.
type loadedPause struct {
	row      *suspensionRow
	inserted bool
	before   outstanding
}

func (s *setWriter) claim(job *jobRow, h *domain.Handoff, handOver func()) {
	s.claims = append(s.claims, setClaim{job: job, h: h, handOver: handOver})
}

// setStep says whether the set path can apply c: a retry reschedules its
// job rather than ending it, and a replay's commit can be refused after
// its job has ended (ErrLogConflict), which the set path cannot undo for
// one transition alone; a group's pauses are many rows that may decide
// the group as they commit (see pauseGroup); a commit that fails its run
// keeps its job for a retry (see keepFailedStep).
func setStep(c domain.StepCommit) bool {
	return c.RetryAt == nil && c.ExpectSeq == 0 && len(c.Branches) == 0 && !fails(c)
}

// applySet applies, in tx, the starts, step commits and resumes of batch
// that the set path can, and returns the indexes of the others, in batch order, for
// the savepoint path. out is filled for the transitions applied; after
// gets what each does once committed. An error means the batch's
// transaction cannot commit.
//
// A transition of a run that another transition of the batch names goes
// to the savepoint path, except the first of them when it is a step
// commit: the set path holds one row of each run. Resumes are named by
// suspension, so their runs are known only once loaded; one whose run is
// taken is handed to the savepoint path then, having changed nothing.
// Decisions take the savepoint path.
func (db *DB) applySet(ctx context.Context, tx bun.Tx, batch []domain.Transition, out []domain.Applied) (rest []int, after []func(), err error) {
	s := &setWriter{db: db, tx: tx, b: db.newBatch(tx)}
	named := map[string]int{} // run id → the first transition naming it
	for i, t := range batch {
		if id := t.RunID(); id != "" {
			if _, ok := named[id]; !ok {
				named[id] = i
			}
		}
	}
	var starts, steps, resumes, fires []int
	for i, t := range batch {
		switch {
		case t.Start != nil:
			starts = append(starts, i)
		case t.Fire != nil && t.Fire.Attempt > 0:
			fires = append(fires, i)
		case t.Step != nil && named[t.Step.RunID] == i && setStep(*t.Step):
			steps = append(steps, i)
		case t.Resume != nil && t.Resume.SuspensionID != "" && t.Resume.Decision == "" && t.Resume.LinkID == "":
			// A decision is a vote, counted with the others on the
			// savepoint path, where a decision link is used up too;
			// people decide far less often than machines resume.
			resumes = append(resumes, i)
		default:
			rest = append(rest, i)
		}
	}
	if len(starts)+len(steps)+len(resumes)+len(fires) < 2 {
		return restAll(batch), nil, nil // nothing to gain
	}
	existing, err := s.insertRuns(ctx, batch, starts, out)
	if err != nil {
		return nil, nil, err
	}
	if err := s.fireAll(ctx, batch, fires, out); err != nil {
		return nil, nil, err
	}
	rest = append(rest, existing...)
	runs, err := s.endJobs(ctx, batch, steps)
	if err != nil {
		return nil, nil, err
	}
	targets, err := s.lockTargets(ctx, batch, resumes)
	if err != nil {
		return nil, nil, err
	}
	taken := map[string]bool{}
	for _, i := range steps {
		taken[batch[i].Step.RunID] = true
	}
	var kept []int
	for _, i := range resumes {
		tg, ok := targets[batch[i].Resume.SuspensionID]
		if !ok {
			out[i].Err = describe(batch[i], sql.ErrNoRows)
			continue
		}
		if _, named := named[tg.run.ID]; named || taken[tg.run.ID] || tg.row.GroupID != nil {
			// A branch of a group resolves its group on the savepoint path.
			rest = append(rest, i)
			continue
		}
		taken[tg.run.ID] = true
		kept = append(kept, i)
	}
	loaded, err := s.insertPauses(ctx, batch, steps, runs)
	if err != nil {
		return nil, nil, err
	}
	won, err := s.resumeAll(ctx, batch, kept, targets, out)
	if err != nil {
		return nil, nil, err
	}
	for _, i := range steps {
		c := *batch[i].Step
		run := runs[c.RunID]
		if run == nil {
			out[i].Err = describeStep(c, domain.ErrStale)
			continue
		}
		c.Handoff.Reset()
		w := &commitWriter{db: db, tx: tx, b: s.b, run: run, now: ts(c.Now), set: s, loaded: loaded[c.RunID]}
		res, done, err := db.commitEnded(ctx, w, c)
		if err != nil {
			return nil, nil, err
		}
		out[i].Commit = res
		s.after = append(s.after, done)
	}
	for _, i := range kept {
		if err := s.resumed(ctx, batch[i].Resume, targets[batch[i].Resume.SuspensionID], won, &out[i]); err != nil {
			return nil, nil, err
		}
	}
	if err := s.finish(ctx); err != nil {
		return nil, nil, err
	}
	slices.Sort(rest)
	return rest, s.after, nil
}

func restAll(batch []domain.Transition) []int {
	rest := make([]int, len(batch))
	for i := range rest {
		rest[i] = i
	}
	return rest
}

// insertRuns inserts the runs the starts begin, with their first events
// and jobs, and returns the starts whose run it did not insert: their
// idempotency key was used before (or earlier in the batch), which the
// savepoint path answers with the existing run.
func (s *setWriter) insertRuns(ctx context.Context, batch []domain.Transition, starts []int, out []domain.Applied) ([]int, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	nrs := make([]domain.NewRun, len(starts))
	for k, i := range starts {
		nrs[k] = *batch[i].Start
	}
	rows, inserted, err := s.startRuns(ctx, nrs)
	if err != nil {
		return nil, err
	}
	var existing []int
	for k, i := range starts {
		if !inserted[k] {
			existing = append(existing, i)
			continue
		}
		out[i] = domain.Applied{Run: rows[k].toDomain(), Created: true}
	}
	return existing, nil
}

// startRuns inserts the runs nrs begin, with their first events and jobs
// (claimed by their handoff's worker, when they have one), and says which
// it inserted: a run whose idempotency key is taken is not.
func (s *setWriter) startRuns(ctx context.Context, nrs []domain.NewRun) ([]*runRow, []bool, error) {
	rows := make([]*runRow, len(nrs))
	for k, nr := range nrs {
		rows[k] = newRunRow(nr)
	}
	ids, err := s.b.insertRuns(ctx, rows)
	if err != nil {
		return nil, nil, err
	}
	made := make(map[string]bool, len(ids))
	for _, id := range ids {
		made[id] = true
	}
	inserted := make([]bool, len(nrs))
	for k, row := range rows {
		if !made[row.ID] {
			continue
		}
		inserted[k] = true
		nr := nrs[k]
		nr.Handoff.Reset()
		ev, job := runStartRows(row, nr)
		s.events = append(s.events, ev)
		if h := nr.Handoff; h != nil {
			s.claim(job, h, func() { handOverStart(h, job, row) })
		} else {
			s.jobs = append(s.jobs, job)
		}
		s.changed = append(s.changed, row.ID)
		s.after = append(s.after, func() { s.db.runCreated(row.ID, nr.Handoff) })
	}
	return rows, inserted, nil
}

// endJobs ends the jobs of the step commits, fenced on their claims as
// endJob fences one, and locks their runs, in id order; it returns the
// runs by id. A commit whose run is missing found its job taken over.
func (s *setWriter) endJobs(ctx context.Context, batch []domain.Transition, steps []int) (map[string]*runRow, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	ids, attempts := make([]int64, len(steps)), make([]int, len(steps))
	for k, i := range steps {
		ids[k], attempts[k] = batch[i].Step.Job.ID, batch[i].Step.Job.Attempt
	}
	var rows []runRow
	if err := s.db.hotScan(ctx, s.tx, &rows, hotEndJobs, ids, attempts, jobRunning); err != nil && !isNoRows(err) {
		return nil, err
	}
	runs := make(map[string]*runRow, len(rows))
	for k := range rows {
		runs[rows[k].ID] = &rows[k]
	}
	return runs, nil
}

// target is a resume's suspension with its run, locked.
type target struct {
	run *runRow
	row *suspensionRow
	s   domain.Suspension
}

// lockTargets reads the suspensions the resumes name with their runs,
// locking the runs in id order, as lockResumeTarget does for one; by
// suspension id. Its statement is bun's relation query, written once
// over an array of ids (newHotTargets).
func (s *setWriter) lockTargets(ctx context.Context, batch []domain.Transition, resumes []int) (map[string]target, error) {
	if len(resumes) == 0 {
		return nil, nil
	}
	ids := make([]string, len(resumes))
	for k, i := range resumes {
		ids[k] = batch[i].Resume.SuspensionID
	}
	var rows []runRow
	if err := s.db.hotScan(ctx, s.tx, &rows, s.db.hotTargets, ids); err != nil && !isNoRows(err) {
		return nil, err
	}
	targets := make(map[string]target, len(rows))
	for k := range rows {
		run := &rows[k]
		row := run.Suspension
		run.Suspension = nil
		d, err := row.toDomain()
		if err != nil {
			return nil, err
		}
		targets[row.ID] = target{run: run, row: row, s: d}
	}
	return targets, nil
}

// insertPauses inserts the pauses of the step commits and counts their
// runs' outstanding work, in one hot statement (hotPausesSQL): the count's
// snapshot does not include the new rows, as on the lone path. A pause
// whose row was not inserted (its key is taken: a resume came first, or
// the step paused before) is left to the commit, which goes on as alone.
func (s *setWriter) insertPauses(ctx context.Context, batch []domain.Transition, steps []int, runs map[string]*runRow) (map[string]*loadedPause, error) {
	loaded := map[string]*loadedPause{}
	cols := make([][]*string, len(s.db.hotPause.fields))
	var runIDs []string
	var ids []*string
	for _, i := range steps {
		c := batch[i].Step
		run := runs[c.RunID]
		count := c.Finish == nil
		if run == nil || run.Status.Terminal() || (c.Suspension == nil && !count) {
			continue
		}
		l := &loadedPause{}
		var id *string
		if ns := c.Suspension; ns != nil {
			key := c.Step
			if ns.StepKey != "" {
				key = ns.StepKey
			}
			w := commitWriter{run: run, now: ts(c.Now)}
			l.row = w.suspensionRow(ns, key)
			if err := s.db.hotPause.texts(cols, l.row); err != nil {
				return nil, err
			}
			id = &l.row.ID
		}
		loaded[c.RunID] = l
		runIDs, ids = append(runIDs, c.RunID), append(ids, id)
	}
	if len(runIDs) == 0 {
		return loaded, nil
	}
	q, err := s.db.hotPausesSQL(ctx, s.tx)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, len(cols)+2)
	for _, c := range cols {
		args = append(args, c)
	}
	var found []struct {
		RunID    string `bun:"run_id"`
		Inserted bool   `bun:"inserted"`
		Jobs     int    `bun:"jobs"`
		Pending  int    `bun:"pending"`
	}
	if err := s.db.hotScan(ctx, s.tx, &found, q, append(args, runIDs, ids)...); err != nil {
		return nil, err
	}
	for _, f := range found {
		l := loaded[f.RunID]
		l.inserted = f.Inserted && l.row != nil
		l.before = outstanding{Jobs: f.Jobs, Pending: f.Pending}
	}
	return loaded, nil
}

// resumeAll decides each kept resume by domain.DecideResume and resumes,
// in one conditional update, the suspensions of those that apply; it
// returns the rows it changed, by id. A resume refused is answered in out;
// one that repeats or lost is answered from the row as it is now.
func (s *setWriter) resumeAll(ctx context.Context, batch []domain.Transition, kept []int, targets map[string]target, out []domain.Applied) (map[string]*suspensionRow, error) {
	var ids, data, by, keys, decisions []string
	var at []time.Time
	for _, i := range kept {
		req := *batch[i].Resume
		req.Handoff.Reset()
		tg := targets[req.SuspensionID]
		d := tg.s
		fate, err := domain.DecideResume(req, domain.ResumeFacts{RunStatus: tg.run.Status, Target: &d})
		switch {
		case err != nil && d.Status == domain.SuspensionPending && !d.Precompleted:
			out[i].Err = describe(batch[i], err) // refused by the request's check
			continue
		case err != nil, fate != domain.ResumeApply:
			continue // answered once the update has run, from the row as it is then
		}
		ids, data, at = append(ids, req.SuspensionID), append(data, string(domain.OrNull(req.Data))), append(at, ts(req.Now))
		by, keys, decisions = append(by, req.By), append(keys, req.RequestKey), append(decisions, string(req.Decision))
	}
	if len(ids) == 0 {
		return map[string]*suspensionRow{}, nil
	}
	var rows []suspensionRow
	err := s.db.hotScan(ctx, s.tx, &rows, hotResumeAll, ids, data, at, by, nullStrings(keys), nullStrings(decisions),
		string(domain.SuspensionResumed), string(domain.SuspensionPending))
	if err != nil && !isNoRows(err) {
		return nil, err
	}
	return wonRows(rows), nil
}

// resumed goes on from a kept resume once the update has run: the rest of
// its resume when it won, else its answer from the row as it is now.
func (s *setWriter) resumed(ctx context.Context, r *domain.ResumeRequest, tg target, won map[string]*suspensionRow, out *domain.Applied) error {
	if out.Err != nil {
		return nil
	}
	req := *r
	db := s.db
	var d domain.Suspension
	var err error
	if row, ok := won[req.SuspensionID]; ok {
		if d, err = db.resumeWon(ctx, s.b, s, tg.run, row, req); err != nil {
			return err // the batch cannot commit
		}
	} else if d, err = db.lostResume(ctx, s.tx, req.SuspensionID, req); err != nil {
		out.Err = describe(domain.Transition{Resume: r}, err) // this resume's answer
		return nil
	}
	out.Suspension = d
	s.after = append(s.after, func() { db.resumed(req, d) })
	return nil
}

// finish claims the handed-off jobs, in one statement whose RETURNING says
// which were taken, and then writes the events, the runs and the change
// notices, with what the transitions left in the batch, in one message.
func (s *setWriter) finish(ctx context.Context) error {
	if err := s.claimAll(ctx); err != nil {
		return err
	}
	if err := s.b.insertEvents(ctx, s.events); err != nil {
		return err
	}
	if len(s.runs) > 0 {
		if err := s.b.writeRuns(ctx, s.runs); err != nil {
			return err
		}
	}
	if len(s.jobs) > 0 {
		if err := s.b.hot(ctx, hotInsertJobs, jobArrays(s.jobs)...); err != nil {
			return err
		}
		if err := s.db.notifyJobs(ctx, s.b); err != nil {
			return err
		}
	}
	if len(s.ended) > 0 {
		err := s.b.hot(ctx, hotEndRuns, s.ended, string(domain.SuspensionCancelled), string(domain.SuspensionPending), jobAvailable)
		if err != nil {
			return err
		}
	}
	if err := s.db.notifyChange(ctx, s.b, s.changed...); err != nil {
		return err
	}
	return s.b.flush(ctx)
}

// claimAll inserts the handed-off jobs claimed by their workers, as
// insertClaimed inserts one, and hands over those it claimed.
func (s *setWriter) claimAll(ctx context.Context) error {
	if len(s.claims) == 0 {
		return nil
	}
	jobs := make([]*jobRow, len(s.claims))
	for k, c := range s.claims {
		c.job.claimFor(c.h)
		jobs[k] = c.job
	}
	got, err := s.b.insertClaimed(ctx, jobs)
	if err != nil {
		return err
	}
	byKey := make(map[string]int, len(got))
	for k, g := range got {
		byKey[g.Key] = k
	}
	for _, c := range s.claims {
		k, ok := byKey[c.job.Key]
		if !ok {
			c.job.unclaim()
			continue
		}
		c.job.ID, c.job.Attempt = got[k].ID, got[k].Attempt
		c.handOver()
	}
	return nil
}

// newHotTargets writes lockTargets' statement: the runs of the
// suspensions whose ids are $1, each with its suspension as bun's
// relation reads it, locked in id order.
func newHotTargets(db *bun.DB) string {
	return hookedColumn(db.NewSelect().Model((*runRow)(nil))).Relation("Suspension").
		Where("suspension.id = ANY(?::text[])", bun.Safe("$1")).OrderExpr("r.id").For("UPDATE OF r").String()
}
