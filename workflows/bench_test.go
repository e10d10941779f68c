package workflows_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/workflows"
)

// BenchmarkEventRuns: WORKFLOW_BENCH_RUNS events (1,000 by default) start one run each
// through the trigger tick; the runs are worked by 16 workers, as the job queue would; every
// run must end succeeded with its two steps in order, and the receiver must have each step's
// request exactly once (none lost, none doubled). Run it small on a shared machine:
//
//	WORKFLOW_BENCH_RUNS=50 go test -run '^$' -bench BenchmarkEventRuns -benchtime 1x ./workflows/
func BenchmarkEventRuns(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("WORKFLOW_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	for range b.N {
		b.StopTimer()
		bt := setup(b)
		hook := newReceiver(b)
		ctx := context.Background()
		_, err := bt.svc.Create(ctx, bt.ws.ID, workflows.Input{Document: ptr(`name: Bench
trigger: {type: event, event: turn.completed}
steps:
  - {id: first, type: http_request, url: "` + hook.URL + `/first", body: "{{ event.id }}"}
  - {id: second, type: http_request, url: "` + hook.URL + `/second", body: "{{ event.id }}"}
`)})
		require.NoError(b, err)
		events := make([]store.NewEvent, n)
		for i := range events {
			events[i] = store.NewEvent{Type: "turn.completed", Data: map[string]any{"n": i}}
		}
		_, err = bt.st.AppendEvents(ctx, bt.ws.ID, events)
		require.NoError(b, err)
		b.StartTimer()

		// A tick starts a bounded batch of runs; the periodic job ticks every 2 s, so a
		// thousand events take a few ticks.
		started, ticks := 0, 0
		for started < n && ticks < n {
			k, err := bt.svc.Tick(ctx)
			require.NoError(b, err)
			started, ticks = started+k, ticks+1
		}
		require.Equal(b, n, started)
		b.ReportMetric(float64(ticks), "ticks/op")
		wf, err := bt.svc.List(ctx, bt.ws.ID)
		require.NoError(b, err)
		runs, err := bt.st.ListWorkflowRuns(ctx, bt.ws.ID, mustWorkflowID(b, bt, wf.Data[0].ID), n+1)
		require.NoError(b, err)
		require.Len(b, runs, n)
		work := make(chan store.WorkflowRun)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range work {
					if _, err := bt.svc.Advance(ctx, bt.ws.ID, r.ID); err != nil {
						b.Error(err)
					}
				}
			}()
		}
		for _, r := range runs {
			work <- r
		}
		close(work)
		wg.Wait()

		b.StopTimer()
		perEvent := map[string][]string{}
		for _, h := range hook.requests() {
			perEvent[h.Body] = append(perEvent[h.Body], h.Path)
		}
		require.Len(b, perEvent, n, "every run reached the receiver")
		for ev, paths := range perEvent {
			require.Equal(b, []string{"/first", "/second"}, paths, "event %s: its steps once each, in order", ev)
		}
		for _, r := range runs {
			got, err := bt.svc.Run(ctx, bt.ws.ID, r.ShortID)
			require.NoError(b, err)
			require.Equal(b, workflows.RunSucceeded, got.Status)
		}
		require.Len(b, bt.completed(b), n)
		b.ReportMetric(float64(n), "runs/op")
		b.StartTimer()
	}
}

func ptr(s string) *string { return &s }

func mustWorkflowID(tb testing.TB, b *bundle, shortID string) uuid.UUID {
	tb.Helper()
	w, err := b.st.WorkflowByShortID(context.Background(), b.ws.ID, shortID)
	require.NoError(tb, err)
	return w.ID
}
