package responses_test

import (
	"context"
	"crypto/sha256"
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
	"switchboard/events"
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
	hub       *events.Hub
}

func setup(t *testing.T, cfg responses.Config) *testBundle {
	t.Helper()
	st := storetest.New(t)
	fake := llmtest.NewOpenAI(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"beta": {Protocol: "openai", BaseURL: fake.URL, APIKey: "k"}}, false, nil, 0)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Insert-only: the tests work the jobs themselves, through Worker().Work.
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{Logger: log})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	hub := events.NewHub(st, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	svc := responses.New(cfg, st, agent.New(st, catalog.Default(), models, nil, log), jobs, hub, log)
	return &testBundle{svc: svc, store: st, vendor: fake, workspace: ws, hub: hub}
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
	require.Equal(t, []byte(raw), []byte(created.Body), "the create answers the stored bytes")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM ledger`))

	eph := b.request("forget me")
	eph.Store = false
	created, err = b.svc.Create(context.Background(), eph)
	require.NoError(t, err)
	require.Nil(t, created.Body, "nothing stored, nothing to answer verbatim")
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

// waitClock is the clock a waiting retry waits by, fired by hand: the wait's deadline, and
// each re-check timer, announced on armed when the retry found the key held and waits.
type waitClock struct {
	deadline chan time.Time
	armed    chan chan time.Time
}

func (c *waitClock) after(d time.Duration) <-chan time.Time {
	switch d {
	case responses.IdempotencyWait:
		return c.deadline
	case responses.IdempotencyRecheck:
		fire := make(chan time.Time, 1)
		c.armed <- fire
		return fire
	}
	panic("an unexpected wait: " + d.String())
}

// claims counts the claims of an Idempotency-Key and signals each on a channel; the waits
// are on a clock the test moves, so that every claim after the first is one the waiter was
// told to make.
func (b *testBundle) claims(t *testing.T) (count func() int, each <-chan struct{}, clock *waitClock) {
	t.Helper()
	// The hub listens before the test starts: its first LISTEN tells every waiter to look.
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`) == 1
	}, 30*time.Second, 10*time.Millisecond)
	var mu sync.Mutex
	n := 0
	c := make(chan struct{}, 100)
	b.svc.OnClaim(func() {
		mu.Lock()
		n++
		mu.Unlock()
		c <- struct{}{}
	})
	clock = &waitClock{deadline: make(chan time.Time, 1), armed: make(chan chan time.Time, 100)}
	b.svc.SetAfter(clock.after)
	return func() int { mu.Lock(); defer mu.Unlock(); return n }, c, clock
}

// waitingRequest starts a request whose key another request holds; it returns once the
// request has looked at the key once, found it held, and waits; recheck fires the wait's
// re-check timer.
func (b *testBundle) waitingRequest(t *testing.T, req responses.CreateRequest, each <-chan struct{}, clock *waitClock) (_ <-chan createResult, recheck chan<- time.Time) {
	t.Helper()
	out := make(chan createResult, 1)
	go func() {
		created, err := b.svc.Create(context.Background(), req)
		out <- createResult{created, err}
	}()
	receiveWithin(t, each, "the waiting request's first claim")
	return out, receiveWithin(t, clock.armed, "the waiting request's wait")
}

type createResult struct {
	created responses.Created
	err     error
}

func receiveWithin[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// TestIdempotencyWaiterIsToldOfTheCompletion: a retry waiting for the first request with
// its key looks again when that request's turn commits, and replays it: two looks in all,
// not one every 100 ms.
func TestIdempotencyWaiterIsToldOfTheCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	count, each, clock := b.claims(t)
	req := b.request("wait for me")
	req.IdempotencyKey = "order-7"
	sum := canonical(t, req.Body)
	ctx := context.Background()
	held, err := b.store.ClaimIdempotencyKey(ctx, b.workspace.ID, req.IdempotencyKey, sum, time.Hour, time.Hour)
	require.NoError(t, err)
	require.True(t, held.Owned, "the first request holds the key")

	result, _ := b.waitingRequest(t, req, each, clock)
	body := `{"id":"resp_first0000000000000000","object":"response","status":"completed"}`
	require.NoError(t, b.store.InTx(ctx, func(tx *store.Tx) error {
		return tx.WriteTurnRecord(ctx, b.workspace.ID, store.TurnRecord{IdempotencyKey: req.IdempotencyKey,
			Response: store.StoredResponse{ShortID: "resp_first0000000000000000", Status: "completed", Model: "beta-5.4", Body: []byte(body)}})
	}))
	r := receiveWithin(t, result, "answer to the waiting request")
	require.NoError(t, r.err)
	require.JSONEq(t, body, string(r.created.Replay), "the waiter replays the first request's response")
	require.Equal(t, 2, count(), "one look before waiting, one when told")
	require.Empty(t, b.vendor.Requests())
}

// TestIdempotencyWaiterIsToldOfTheRelease: when the first request fails and frees its key,
// the waiting retry is told, takes the key and runs the turn.
func TestIdempotencyWaiterIsToldOfTheRelease(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	count, each, clock := b.claims(t)
	b.vendor.Push(llmtest.Reply{Delay: time.Hour})
	req := b.request("run me once")
	req.IdempotencyKey = "order-8"
	firstCtx, fail := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := b.svc.Create(firstCtx, req)
		first <- err
	}()
	receiveWithin(t, each, "the first request's claim")
	require.Eventually(t, func() bool { return len(b.vendor.Requests()) == 1 }, 30*time.Second, 10*time.Millisecond, "the first turn is in flight")

	result, _ := b.waitingRequest(t, req, each, clock)
	fail() // the first request ends without a turn: its key is released
	require.Error(t, <-first)
	r := receiveWithin(t, result, "answer to the waiting request")
	require.NoError(t, r.err)
	require.Nil(t, r.created.Replay, "the retry ran the turn itself")
	require.Equal(t, 3, count(), "the first request's claim, then the waiter's: one before waiting, one when told")
	require.Len(t, b.vendor.Requests(), 2)
}

// TestIdempotencyWaiterLooksAgainUnaskedThenGivesUp: announcements can be lost, so a
// waiting retry looks again when its re-check timer fires; when the wait's deadline passes
// with the key still held, it answers idempotency_key_in_use.
func TestIdempotencyWaiterLooksAgainUnaskedThenGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t, defaults)
	count, each, clock := b.claims(t)
	req := b.request("still running")
	req.IdempotencyKey = "order-9"
	held, err := b.store.ClaimIdempotencyKey(context.Background(), b.workspace.ID, req.IdempotencyKey, canonical(t, req.Body), time.Hour, time.Hour)
	require.NoError(t, err)
	require.True(t, held.Owned, "another request holds the key")

	result, recheck := b.waitingRequest(t, req, each, clock)
	require.Equal(t, 1, count())
	recheck <- time.Time{}
	receiveWithin(t, each, "the look the re-check asked for")
	receiveWithin(t, clock.armed, "the wait after the second look")
	require.Equal(t, 2, count())

	clock.deadline <- time.Time{}
	r := receiveWithin(t, result, "answer to the waiting request")
	require.Equal(t, "idempotency_key_in_use", apierr.As(r.err).Code)
	require.Equal(t, 2, count(), "no look after the deadline")
	require.Empty(t, b.vendor.Requests())
}

func canonical(t *testing.T, body any) []byte {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	raw, err = json.Marshal(v)
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	return sum[:]
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
	require.Equal(t, "server_error", r["error"].(map[string]any)["code"])
	require.Contains(t, r["error"].(map[string]any)["message"], "(upstream_error)")
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
		require.Equal(t, "server_error", r["error"].(map[string]any)["code"])
		require.Contains(t, r["error"].(map[string]any)["message"], "(response_timed_out)")
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
