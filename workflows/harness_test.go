package workflows_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/mailer"
	"switchboard/mailer/mailtest"
	"switchboard/netguard"
	"switchboard/store"
	"switchboard/store/storetest"
	"switchboard/workflows"
)

// clock is the runs' injected clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// receiver is an HTTP endpoint that records what it receives and answers with statuses
// pushed in order (200 when none is left).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
	onHit    func(n int) // called with the count of requests so far, before answering
}

type received struct {
	Method, Path, Body, Key string
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{Method: req.Method, Path: req.URL.Path, Body: string(body), Key: req.Header.Get("Idempotency-Key")})
		n, status := len(r.got), 200
		if len(r.statuses) > 0 {
			status, r.statuses = r.statuses[0], r.statuses[1:]
		}
		hit := r.onHit
		r.mu.Unlock()
		if hit != nil {
			hit(n)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":true,"n":` + jsonInt(n) + `}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// bundle is a workflow service over its own database, with a workspace, and its vendors
// faked at the wire: an SMTP sink and the alpha model vendor.
type bundle struct {
	st     *store.Store
	svc    *workflows.Service
	ws     store.Workspace
	clock  *clock
	mail   *mailtest.Sink
	vendor *llmtest.Fake
	cfg    workflows.Config
	jobs   *river.Client[pgx.Tx]
}

func setup(t testing.TB) *bundle {
	t.Helper()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(context.Background(), "acme", 5_000_000_000)
	require.NoError(t, err)
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{})
	require.NoError(t, err)
	sink := mailtest.New(t)
	sender, err := mailer.New(sink.URL(), "runs@switchboard.test")
	require.NoError(t, err)
	vendor := llmtest.NewAnthropic(t)
	models, err := llm.NewRegistry(map[string]llm.FamilyConfig{"alpha": {Protocol: vendor.Protocol(), BaseURL: vendor.URL, APIKey: "k"}},
		false, http.DefaultClient, 10*time.Second)
	require.NoError(t, err)
	c := &clock{now: time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)}
	b := &bundle{st: st, ws: ws, clock: c, mail: sink, vendor: vendor, jobs: jobs,
		cfg: workflows.Config{Now: c.Now, Guard: netguard.Guard{AllowPrivate: true}, Mailer: sender, Models: models,
			Backoff: func(attempt int) time.Duration { return time.Duration(attempt) * time.Minute }}}
	b.svc = b.replica()
	return b
}

// replica is another process over the same database: what a run resumes on after a crash.
func (b *bundle) replica() *workflows.Service {
	return workflows.New(b.st, b.jobs, b.cfg, slog.New(slog.DiscardHandler))
}

func (b *bundle) create(t *testing.T, doc string) workflows.View {
	t.Helper()
	v, err := b.svc.Create(context.Background(), b.ws.ID, workflows.Input{Document: &doc})
	require.NoError(t, err)
	return v
}

func (b *bundle) start(t *testing.T, wf workflows.View, input map[string]any) workflows.RunView {
	t.Helper()
	r, err := b.svc.StartManual(context.Background(), b.ws.ID, wf.ID, input)
	require.NoError(t, err)
	require.Equal(t, workflows.RunQueued, r.Status)
	return r
}

func (b *bundle) runID(t *testing.T, r workflows.RunView) uuid.UUID {
	t.Helper()
	got, err := b.st.WorkflowRunByShortID(context.Background(), b.ws.ID, r.ID)
	require.NoError(t, err)
	return got.ID
}

// advance works the run as its job does, on svc, and returns when it may go on (zero: it
// ended).
func (b *bundle) advance(t *testing.T, svc *workflows.Service, r workflows.RunView) time.Time {
	t.Helper()
	until, err := svc.Advance(context.Background(), b.ws.ID, b.runID(t, r))
	require.NoError(t, err)
	return until
}

func (b *bundle) run(t *testing.T, r workflows.RunView) workflows.RunView {
	t.Helper()
	got, err := b.svc.Run(context.Background(), b.ws.ID, r.ID)
	require.NoError(t, err)
	return got
}

// completed are the run.completed events of the workspace's feed, as their data.
func (b *bundle) completed(t testing.TB) []map[string]any {
	t.Helper()
	var evs []store.Event
	for cursor := int64(0); ; {
		page, err := b.st.EventsAfter(context.Background(), b.ws.ID, cursor, 1000)
		require.NoError(t, err)
		evs = append(evs, page...)
		if len(page) < 1000 {
			break
		}
		cursor = page[len(page)-1].Seq
	}
	var out []map[string]any
	for _, e := range evs {
		if e.Type != "run.completed" {
			continue
		}
		var env struct {
			Data map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(e.Envelope, &env))
		out = append(out, env.Data)
	}
	return out
}

func stepStatuses(r workflows.RunView) map[string]string {
	out := map[string]string{}
	for _, s := range r.Steps {
		out[s.ID] = s.Status
	}
	return out
}
