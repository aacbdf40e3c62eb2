package engine

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tollgatehq/tollgate/domain"
)

// echoBatcher answers each transition with its own run id as the error
// text, so that a caller can tell its answer from another's, and records
// the size of every batch.
type echoBatcher struct {
	mu      sync.Mutex
	sizes   []int
	delay   time.Duration
	inBatch int // batches being applied now
	overlap bool
	most    int // most batches applied at once
}

func (b *echoBatcher) Apply(_ context.Context, batch []domain.Transition) []domain.Applied {
	b.mu.Lock()
	b.sizes = append(b.sizes, len(batch))
	b.inBatch++
	b.overlap = b.overlap || b.inBatch > 1
	b.most = max(b.most, b.inBatch)
	b.mu.Unlock()
	time.Sleep(b.delay)
	out := make([]domain.Applied, len(batch))
	for i, t := range batch {
		out[i].Run.ID = t.RunID()
	}
	b.mu.Lock()
	b.inBatch--
	b.mu.Unlock()
	return out
}

func cancelOf(id string) domain.Transition {
	return domain.Transition{Cancel: &domain.CancelRequest{RunID: id}}
}

// applyAtOnce has callers each apply a transition of its own on c at
// once, and checks that each hears its own answer and that b applied them
// all; it returns b's largest batch.
func applyAtOnce(t *testing.T, c *committer, b *echoBatcher, callers int) (biggest int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, callers)
	for i := range callers {
		wg.Go(func() {
			id := strconv.Itoa(i)
			if got := c.apply(t.Context(), cancelOf(id)); got.Run.ID != id {
				errs <- "caller " + id + " got the answer for " + got.Run.ID
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	total := 0
	for _, n := range b.sizes {
		total += n
		biggest = max(biggest, n)
	}
	if total != callers {
		t.Errorf("%d transitions applied; want %d", total, callers)
	}
	return biggest
}

// A lone caller commits at once, in a batch of its own.
func TestCommitterAloneWaitsForNobody(t *testing.T) {
	b := &echoBatcher{}
	c := newCommitter(b, 8, 1)
	for i := range 3 {
		if got := c.apply(t.Context(), cancelOf(strconv.Itoa(i))); got.Run.ID != strconv.Itoa(i) {
			t.Fatalf("answer %q for transition %d", got.Run.ID, i)
		}
	}
	if len(b.sizes) != 3 || b.sizes[0] != 1 || b.sizes[1] != 1 || b.sizes[2] != 1 {
		t.Fatalf("batch sizes %v; want three batches of one", b.sizes)
	}
}

// Callers that arrive while a batch commits go together in the next, no
// more than the limit at a time, one batch at a time; each hears its own
// answer, and none is lost.
func TestCommitterGathersWhileABatchCommits(t *testing.T) {
	const callers, limit = 200, 16
	b := &echoBatcher{delay: 2 * time.Millisecond}
	c := newCommitter(b, limit, 1)
	biggest := applyAtOnce(t, c, b, callers)
	if biggest < 2 || biggest > limit {
		t.Errorf("largest batch %d; want between 2 and %d (sizes %v)", biggest, limit, b.sizes)
	}
	if b.overlap {
		t.Error("two batches were applied at once")
	}
}

// With two lanes, two batches commit at once, never three, and callers
// still gather into batches while both are busy; each hears its own
// answer, and none is lost.
func TestCommitterLanesCommitBatchesAtOnce(t *testing.T) {
	const callers, limit = 200, 16
	b := &echoBatcher{delay: 2 * time.Millisecond}
	c := newCommitter(b, limit, 2)
	biggest := applyAtOnce(t, c, b, callers)
	if biggest < 2 {
		t.Errorf("largest batch %d; want callers gathered (sizes %v)", biggest, b.sizes)
	}
	if b.most != 2 {
		t.Errorf("at most %d batches applied at once; want 2", b.most)
	}
	if c.leading != 0 || len(c.queue) != 0 {
		t.Errorf("after all callers: %d lanes leading, %d queued; want none", c.leading, len(c.queue))
	}
}

// With a limit of one, callers do not queue behind each other: each
// applies its transition at once, concurrently with the others.
func TestCommitterOfOneDoesNotSerialize(t *testing.T) {
	b := &echoBatcher{delay: 20 * time.Millisecond}
	c := newCommitter(b, 1, 1)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { c.apply(t.Context(), cancelOf(strconv.Itoa(i))) })
	}
	wg.Wait()
	if !b.overlap {
		t.Error("transitions of a committer of one were applied one after another")
	}
}

// gateBatcher holds every batch until the test opens its gate.
type gateBatcher struct {
	entered chan struct{}
	gate    chan struct{}
}

func (b *gateBatcher) Apply(_ context.Context, batch []domain.Transition) []domain.Applied {
	b.entered <- struct{}{}
	<-b.gate
	return make([]domain.Applied, len(batch))
}

// The engine is busy while transitions overlap in commit, and only then:
// one commit alone is a quiet engine.
func TestEngineBusyWhileCommitsOverlap(t *testing.T) {
	b := &gateBatcher{entered: make(chan struct{}, 2), gate: make(chan struct{})}
	e := &Engine{commits: newCommitter(b, 8, 1)}
	if e.Busy() {
		t.Fatal("an idle engine is busy")
	}
	var wg sync.WaitGroup
	wg.Go(func() { e.apply(t.Context(), cancelOf("a")) })
	<-b.entered
	if e.Busy() {
		t.Fatal("one commit makes the engine busy")
	}
	wg.Go(func() { e.apply(t.Context(), cancelOf("b")) })
	deadline := time.Now().Add(5 * time.Second)
	for !e.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("a second transition queued behind a commit does not make the engine busy")
		}
		time.Sleep(time.Millisecond)
	}
	close(b.gate)
	wg.Wait()
	if e.Busy() {
		t.Fatal("the engine stays busy after its commits")
	}
}

// reportBatcher answers a report with its work item ended as reported.
type reportBatcher struct{ seen []domain.Transition }

func (b *reportBatcher) Apply(_ context.Context, batch []domain.Transition) []domain.Applied {
	b.seen = append(b.seen, batch...)
	out := make([]domain.Applied, len(batch))
	for i, t := range batch {
		if t.Report != nil {
			out[i].WorkItem = domain.WorkItem{ID: "w1", State: t.Report.Outcome.State(), UpdatedAt: t.Report.Now}
		}
	}
	return out
}

// An async step's report goes through the engine's one door, stamped with
// the engine's time, and its caller hears the item as the commit left it.
func TestReportWorkGoesThroughTheCommitter(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := &reportBatcher{}
	e := &Engine{commits: newCommitter(b, 8, 1), o: Opts{Clock: stoppedClock{at}}}
	item, err := e.ReportWork(t.Context(), domain.WorkReport{WorkflowID: "work", StepName: "call", Outcome: domain.StepOutcome{Success: true}})
	if err != nil || item.ID != "w1" || item.State != domain.WorkSucceeded {
		t.Fatalf("ReportWork = %+v, %v", item, err)
	}
	if len(b.seen) != 1 || b.seen[0].Report == nil || !b.seen[0].Report.Now.Equal(at) || b.seen[0].Report.StepName != "call" {
		t.Fatalf("the writer saw %+v; want the report, at the engine's time", b.seen)
	}
}

type stoppedClock struct{ t time.Time }

func (c stoppedClock) Now() time.Time { return c.t }

// A transition's span names its run, and a resume by suspension id, whose
// run is known only once it commits, names the suspension rather than an
// empty run.
func TestTransitionSpansNameWhatTheyChange(t *testing.T) {
	for _, c := range []struct {
		t    domain.Transition
		want map[string]string
	}{
		{domain.Transition{Step: &domain.StepCommit{RunID: "r1"}}, map[string]string{"run_id": "r1"}},
		{domain.Transition{Resume: &domain.ResumeRequest{SuspensionID: "s1"}}, map[string]string{"suspension_id": "s1"}},
		{domain.Transition{Resume: &domain.ResumeRequest{RunID: "r2", SuspensionID: "s2"}}, map[string]string{"run_id": "r2", "suspension_id": "s2"}},
	} {
		if got := transitionAttrs(c.t); !maps.Equal(got, c.want) {
			t.Errorf("%s: %v; want %v", c.t.Kind(), got, c.want)
		}
	}
}
