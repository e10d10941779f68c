package responses_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/responses"
	"switchboard/store"
	"switchboard/store/storetest"
)

// testBundle is the responses domain over its own database, with the beta family faked at
// the wire behind the real adapter.
type testBundle struct {
	svc       *responses.Service
	store     *store.Store
	vendor    *llmtest.Fake
	workspace store.Workspace
}

func setup(t *testing.T, cfg responses.Config) *testBundle {
	t.Helper()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Insert-only: the tests work the jobs themselves, through Worker().Work.
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{Logger: log})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	svc := responses.New(cfg, st, agent.New(st, catalog.Default(), models, nil, log), jobs, log)
	return &testBundle{svc: svc, store: st, vendor: fake, workspace: ws}
}

var defaults = responses.Config{TTL: time.Minute, IdempotencyRetention: time.Hour}

func (b *testBundle) request(text string) responses.CreateRequest {
	return responses.CreateRequest{WorkspaceID: b.workspace.ID, Model: "beta-5.4", Input: responses.TurnInput{Text: text},
		Store: true, Body: map[string]string{"input": text}}
}

func (b *testBundle) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), query).Scan(&n))
	return n
}

// job is the queued job of a background response, as a worker receives it.
func (b *testBundle) job(t *testing.T, responseID string) *river.Job[responses.BackgroundArgs] {
	t.Helper()
	var raw []byte
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT args FROM river_job WHERE kind = 'background_response' AND args->>'response_id' = $1`, responseID).Scan(&raw))
	var args responses.BackgroundArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	return &river.Job[responses.BackgroundArgs]{Args: args}
}

func (b *testBundle) stored(t *testing.T, id string) map[string]any {
	t.Helper()
	raw, err := b.svc.Get(context.Background(), b.workspace.ID, id)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

func TestStoredCreateRecordsTheResponseWithTheTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	created, err := b.svc.Create(context.Background(), b.request("hello"))
	require.NoError(t, err)
	require.Equal(t, "reply to: hello", created.Response.OutputText)
	raw, err := b.svc.Get(context.Background(), b.workspace.ID, created.Response.Id)
	require.NoError(t, err)
	want, err := json.Marshal(created.Response)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(raw), "GET answers what the create answered")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM ledger`))

	eph := b.request("forget me")
	eph.Store = false
	created, err = b.svc.Create(context.Background(), eph)
	require.NoError(t, err)
	_, err = b.svc.Get(context.Background(), b.workspace.ID, created.Response.Id)
	require.Equal(t, apierr.KindNotFound, apierr.As(err).Kind, "store: false keeps no response")
}

func TestIdempotentCreateRunsOnceAndReplaysTheStoredBody(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	req := b.request("charge me once")
	req.IdempotencyKey = "order-1"
	first, err := b.svc.Create(context.Background(), req)
	require.NoError(t, err)
	again, err := b.svc.Create(context.Background(), req)
	require.NoError(t, err)
	stored, err := b.svc.Get(context.Background(), b.workspace.ID, first.Response.Id)
	require.NoError(t, err)
	require.Equal(t, []byte(stored), []byte(again.Replay), "the replay is the stored body, byte for byte")
	require.Len(t, b.vendor.Requests(), 1)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM ledger`))

	req.Body = map[string]string{"input": "another body"}
	_, err = b.svc.Create(context.Background(), req)
	require.Equal(t, "idempotency_key_reused", apierr.As(err).Code)
}

func TestFailedIdempotentTurnFreesItsKey(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	b.vendor.Push(llmtest.Reply{Status: http.StatusServiceUnavailable})
	req := b.request("retry me")
	req.IdempotencyKey = "k"
	_, err := b.svc.Create(context.Background(), req)
	require.Equal(t, apierr.KindUpstream, apierr.As(err).Kind)
	created, err := b.svc.Create(context.Background(), req)
	require.NoError(t, err, "the retry runs the turn")
	require.Nil(t, created.Replay)
	require.Len(t, b.vendor.Requests(), 2)
}

func (b *testBundle) queue(t *testing.T, text string) string {
	t.Helper()
	req := b.request(text)
	req.Background = true
	created, err := b.svc.Create(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "queued", string(created.Response.Status))
	return created.Response.Id
}

// TestBackgroundTurnIsChargedOnceHoweverOftenItRuns: the response row guards the turn; a
// second run, sequential or concurrent (a rescued job beside a slow one), never commits.
func TestBackgroundTurnIsChargedOnceHoweverOftenItRuns(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	w := b.svc.Worker()

	id := b.queue(t, "once")
	job := b.job(t, id)
	require.NoError(t, w.Work(context.Background(), job))
	require.NoError(t, w.Work(context.Background(), job), "a finished response is not run again")
	require.Equal(t, "completed", b.stored(t, id)["status"])
	require.Len(t, b.vendor.Requests(), 1)

	id = b.queue(t, "twice at once")
	job = b.job(t, id)
	b.vendor.Push(llmtest.Reply{Text: "slow", Delay: 200 * time.Millisecond}, llmtest.Reply{Text: "slow", Delay: 200 * time.Millisecond})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); require.NoError(t, w.Work(context.Background(), job)) }()
	}
	wg.Wait()
	require.Equal(t, "completed", b.stored(t, id)["status"])
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM ledger`), "one charge per response")
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
}

func TestBackgroundFailureIsStoredAndAnnouncedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	b.vendor.Push(llmtest.Reply{Status: http.StatusServiceUnavailable})
	id := b.queue(t, "x")
	require.NoError(t, b.svc.Worker().Work(context.Background(), b.job(t, id)), "a failed turn is final, not retried")
	r := b.stored(t, id)
	require.Equal(t, "failed", r["status"])
	require.Equal(t, "upstream_error", r["error"].(map[string]any)["code"])
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
}

// TestConcurrentSweepsFailEachStuckResponseOnce, and a job that runs after the sweep
// charges nothing.
func TestConcurrentSweepsFailEachStuckResponseOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, responses.Config{TTL: time.Millisecond, IdempotencyRetention: time.Hour})
	ids := []string{b.queue(t, "a"), b.queue(t, "b")}
	// Past the TTL by the database's clock, which the sweep reads.
	_, err := b.store.Pool().Exec(context.Background(), `UPDATE responses SET created_at = now() - interval '1 minute'`)
	require.NoError(t, err)

	counts := make(chan int, 3)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := b.svc.SweepStuck(context.Background())
			require.NoError(t, err)
			counts <- n
		}()
	}
	wg.Wait()
	close(counts)
	total := 0
	for n := range counts {
		total += n
	}
	require.Equal(t, 2, total)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM events WHERE type = 'meta_response.completed'`))
	for _, id := range ids {
		r := b.stored(t, id)
		require.Equal(t, "failed", r["status"])
		require.Equal(t, "response_timed_out", r["error"].(map[string]any)["code"])
		require.NoError(t, b.svc.Worker().Work(context.Background(), b.job(t, id)))
	}
	require.Empty(t, b.vendor.Requests(), "a swept response never runs")
	require.Zero(t, b.count(t, `SELECT count(*) FROM ledger`))
}

func TestPreviousResponseMustBeStoredAndFinished(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	req := b.request("next")
	req.PreviousResponseID = "resp_missing"
	_, err := b.svc.Create(context.Background(), req)
	require.Equal(t, "previous_response_id", apierr.As(err).Param)

	req.PreviousResponseID = b.queue(t, "not yet")
	_, err = b.svc.Create(context.Background(), req)
	require.Equal(t, "response_not_finished", apierr.As(err).Code)

	bad := b.request("x")
	bad.Background, bad.Store = true, false
	_, err = b.svc.Create(context.Background(), bad)
	require.Equal(t, "background", apierr.As(err).Param)
}
