package events

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"switchboard/netguard"
	"switchboard/shortid"
	"switchboard/store"
	"switchboard/store/storetest"
)

// receiver is a webhook receiver answering with the statuses it is given, in turn (the last
// one repeats), and keeping what it received.
type receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	statuses []int
	got      []received
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: body})
		code := r.statuses[0]
		if len(r.statuses) > 1 {
			r.statuses = r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

type deliveryBundle struct {
	store  *store.Store
	ws     uuid.UUID
	worker *rivertest.Worker[DeliveryArgs, pgx.Tx]
	tx     pgx.Tx
	cfg    DeliveryConfig
}

// setupDelivery builds the deliverer behind River's test worker: jobs are inserted and worked
// in a transaction rolled back at the end, with River's real executor deciding completion,
// retry, cancellation and discarding from what Work returns.
func setupDelivery(t *testing.T, cfg DeliveryConfig) *deliveryBundle {
	t.Helper()
	return setupDeliveryWith(t, cfg, &http.Client{}, discardLog())
}

// setupDeliveryWith is setupDelivery with the deliverer's HTTP client and server log.
func setupDeliveryWith(t *testing.T, cfg DeliveryConfig, client *http.Client, log *slog.Logger) *deliveryBundle {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	d := NewDeliverer(st, client, cfg, log)
	worker := rivertest.NewWorker(t, riverpgxv5.New(st.Pool()), &river.Config{Logger: discardLog()}, river.Worker[DeliveryArgs](d))
	tx, err := st.Pool().Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return &deliveryBundle{store: st, ws: ws.ID, worker: worker, tx: tx, cfg: cfg}
}

func (b *deliveryBundle) endpoint(t *testing.T, url string, types ...string) store.WebhookEndpoint {
	t.Helper()
	if len(types) == 0 {
		types = []string{"*"}
	}
	ep, err := b.store.CreateWebhookEndpoint(context.Background(), store.WebhookEndpoint{
		WorkspaceID: b.ws, ShortID: shortid.New(shortid.Webhook), URL: url, EventTypes: types, Secret: NewSecret()})
	require.NoError(t, err)
	return ep
}

func (b *deliveryBundle) refresh(t *testing.T, ep store.WebhookEndpoint) store.WebhookEndpoint {
	t.Helper()
	got, err := b.store.WebhookEndpointByRef(context.Background(), b.ws, ep.ID.String())
	require.NoError(t, err)
	return got
}

// attempts lists the endpoint's recorded attempts, oldest first.
func (b *deliveryBundle) attempts(t *testing.T, ep store.WebhookEndpoint) []store.WebhookAttempt {
	t.Helper()
	list, err := b.store.ListWebhookAttempts(context.Background(), b.ws, ep.ID, 100)
	require.NoError(t, err)
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list
}

// work inserts and works a delivery job. The error is what Work returned (a failed attempt)
// beside River's verdict on the job.
func (b *deliveryBundle) work(t *testing.T, ep store.WebhookEndpoint, ev store.Event) (*rivertest.WorkResult, error) {
	t.Helper()
	res, err := b.worker.Work(context.Background(), t, b.tx, DeliveryArgs{WorkspaceID: b.ws, EndpointID: ep.ID, EventSeq: ev.Seq}, nil)
	require.NotNil(t, res, "worker: %v", err)
	return res, err
}

// rework works an existing job again, as River does on its retry.
func (b *deliveryBundle) rework(t *testing.T, job *rivertype.JobRow) (*rivertest.WorkResult, error) {
	t.Helper()
	res, err := b.worker.WorkJob(context.Background(), t, b.tx, job)
	require.NotNil(t, res, "worker: %v", err)
	return res, err
}

var testDelivery = DeliveryConfig{RetryBase: time.Minute, Timeout: 10 * time.Second, DisableAfter: 15}

func TestDeliverySignedStandardWebhook(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, testDelivery)
	recv := newReceiver(t, http.StatusNoContent)
	ep := b.endpoint(t, recv.srv.URL)
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]

	res, err := b.work(t, ep, ev)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, DeliveryQueue, res.Job.Queue)
	require.Equal(t, MaxAttempts, res.Job.MaxAttempts)

	got := recv.requests()
	require.Len(t, got, 1)
	require.JSONEq(t, string(ev.Envelope), string(got[0].body))
	require.Equal(t, ev.ShortID, got[0].header.Get("webhook-id"))
	require.Equal(t, "application/json", got[0].header.Get("Content-Type"))
	verifier, err := standardwebhooks.NewWebhook(ep.Secret)
	require.NoError(t, err)
	require.NoError(t, verifier.Verify(got[0].body, got[0].header), "a Standard Webhooks receiver accepts it")
	stranger, err := standardwebhooks.NewWebhook(NewSecret())
	require.NoError(t, err)
	require.Error(t, stranger.Verify(got[0].body, got[0].header), "another secret does not")
	require.Error(t, verifier.Verify(append(got[0].body, ' '), got[0].header), "nor does a changed body")

	attempts := b.attempts(t, ep)
	require.Len(t, attempts, 1)
	require.True(t, attempts[0].Succeeded)
	require.Equal(t, 1, attempts[0].Attempt)
	require.Equal(t, http.StatusNoContent, *attempts[0].ResponseCode)
	require.Equal(t, ev.ShortID, attempts[0].EventID)
	require.Equal(t, "turn.completed", attempts[0].EventType)
}

// TestSignMatchesTheLibrary pins our signer to the reference implementation.
func TestSignMatchesTheLibrary(t *testing.T) {
	t.Parallel()
	secret := NewSecret()
	ts := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	ours, err := Sign(secret, "evt_1", ts, body)
	require.NoError(t, err)
	lib, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	theirs, err := lib.Sign("evt_1", ts, body)
	require.NoError(t, err)
	require.Equal(t, theirs, ours)
	_, err = Sign("whsec_not base64!", "evt_1", ts, body)
	require.Error(t, err)
}

// TestDeliveryStatusClasses: only a 2xx answer delivers; anything else, and an unreachable
// receiver, is a failed attempt that River retries on the backoff schedule.
func TestDeliveryStatusClasses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int // 0: the receiver is unreachable
		delivered bool
	}{
		{http.StatusOK, true},
		{http.StatusCreated, true},
		{http.StatusAccepted, true},
		{299, true},
		{http.StatusNotModified, false},
		{http.StatusBadRequest, false},
		{http.StatusUnauthorized, false},
		{http.StatusNotFound, false},
		{http.StatusGone, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusServiceUnavailable, false},
		{0, false},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			t.Parallel()
			b := setupDelivery(t, testDelivery)
			url := "http://127.0.0.1:1/unreachable"
			var recv *receiver
			if tc.status != 0 {
				recv = newReceiver(t, tc.status)
				url = recv.srv.URL
			}
			ep := b.endpoint(t, url)
			ev := appendEvents(t, b.store, b.ws, turn(1))[0]

			before := time.Now()
			res, workErr := b.work(t, ep, ev)
			after := time.Now()
			attempts := b.attempts(t, ep)
			require.Len(t, attempts, 1)
			a := attempts[0]
			require.Equal(t, tc.delivered, a.Succeeded)
			if tc.status == 0 {
				require.Nil(t, a.ResponseCode)
				require.Equal(t, FailureConnectionRefused, *a.Error)
			} else {
				require.Equal(t, tc.status, *a.ResponseCode)
				require.Len(t, recv.requests(), 1)
			}
			if tc.delivered {
				require.NoError(t, workErr)
				require.Equal(t, river.EventKindJobCompleted, res.EventKind)
				require.Nil(t, a.Error)
				require.Zero(t, b.refresh(t, ep).ConsecutiveFailures)
				return
			}
			require.Error(t, workErr)
			require.Equal(t, FailureClass(workErr), *a.Error, "the class of what Work returned")
			require.Equal(t, river.EventKindJobFailed, res.EventKind)
			require.Equal(t, rivertype.JobStateRetryable, res.Job.State)
			requireScheduled(t, res.Job, before, after, b.cfg.RetryBase)
			require.NotNil(t, a.Error)
			require.Equal(t, 1, b.refresh(t, ep).ConsecutiveFailures)
			require.True(t, b.refresh(t, ep).Enabled)
		})
	}
}

// requireScheduled checks the retry was scheduled wait after the attempt, which ran between
// before and after (no clock is measured: the bounds come from the test's own timestamps).
func requireScheduled(t *testing.T, job *rivertype.JobRow, before, after time.Time, wait time.Duration) {
	t.Helper()
	// The database keeps microseconds.
	require.False(t, job.ScheduledAt.Before(before.Add(wait).Truncate(time.Microsecond)), "scheduled %s, attempt at %s, wait %s", job.ScheduledAt, before, wait)
	require.False(t, job.ScheduledAt.After(after.Add(wait).Add(time.Microsecond)), "scheduled %s, attempt by %s, wait %s", job.ScheduledAt, after, wait)
}

// TestDeliveryRetriesThenSucceeds works one job as River retries it: each attempt is recorded
// with its number, waits double, and a success clears the failure count.
func TestDeliveryRetriesThenSucceeds(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, testDelivery)
	recv := newReceiver(t, http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusOK)
	ep := b.endpoint(t, recv.srv.URL)
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]

	before := time.Now()
	res, err := b.work(t, ep, ev)
	require.ErrorContains(t, err, "answered 503")
	requireScheduled(t, res.Job, before, time.Now(), b.cfg.RetryBase)
	require.Equal(t, 1, b.refresh(t, ep).ConsecutiveFailures)

	before = time.Now()
	res, err = b.rework(t, res.Job)
	require.ErrorContains(t, err, "answered 502")
	require.Equal(t, river.EventKindJobFailed, res.EventKind)
	requireScheduled(t, res.Job, before, time.Now(), 2*b.cfg.RetryBase)
	require.Equal(t, 2, b.refresh(t, ep).ConsecutiveFailures)

	res, err = b.rework(t, res.Job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Zero(t, b.refresh(t, ep).ConsecutiveFailures, "a success clears the failure count")

	var nums []int
	var ok []bool
	for _, a := range b.attempts(t, ep) {
		nums, ok = append(nums, a.Attempt), append(ok, a.Succeeded)
	}
	require.Equal(t, []int{1, 2, 3}, nums)
	require.Equal(t, []bool{false, false, true}, ok)
	got := recv.requests()
	require.Len(t, got, 3)
	for _, r := range got {
		require.Equal(t, ev.ShortID, r.header.Get("webhook-id"), "every attempt carries the same id, for receivers to deduplicate")
	}
}

// TestDeliveryGivesUpAfterMaxAttempts: the last attempt's failure discards the job.
func TestDeliveryGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, testDelivery)
	recv := newReceiver(t, http.StatusInternalServerError)
	ep := b.endpoint(t, recv.srv.URL)
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]
	res, _ := b.work(t, ep, ev)
	for attempt := 2; attempt <= MaxAttempts; attempt++ {
		require.Equal(t, rivertype.JobStateRetryable, res.Job.State, "attempt %d", attempt-1)
		res, _ = b.rework(t, res.Job)
	}
	require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
	require.Len(t, b.attempts(t, ep), MaxAttempts)
	require.True(t, b.refresh(t, ep).Enabled, "fewer failures than DisableAfter")
}

// TestSuccessfulDeliveriesLeaveTheEndpointRowAlone: a success with no failure to reset writes
// no new version of the endpoint's row (its xmin stays), so that deliveries to one endpoint
// never queue on its row lock; the attempt is still recorded.
func TestSuccessfulDeliveriesLeaveTheEndpointRowAlone(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, testDelivery)
	recv := newReceiver(t, http.StatusOK)
	ep := b.endpoint(t, recv.srv.URL)
	xmin := func() string {
		var x string
		require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT xmin::text FROM webhook_endpoints WHERE id = $1`, ep.ID).Scan(&x))
		return x
	}
	before := xmin()
	for _, ev := range appendEvents(t, b.store, b.ws, turn(1), turn(2), turn(3)) {
		res, _ := b.work(t, ep, ev)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	require.Equal(t, before, xmin(), "the endpoint's row was rewritten by a success")
	require.Len(t, b.attempts(t, ep), 3)
	require.True(t, b.refresh(t, ep).Enabled)
}

// TestDeliveryDisablesAfterConsecutiveFailures: DisableAfter failures in a row disable the
// endpoint and cancel the job; deliveries to it then stop without a request. A success in
// between starts the count again.
func TestDeliveryDisablesAfterConsecutiveFailures(t *testing.T) {
	t.Parallel()
	cfg := testDelivery
	cfg.DisableAfter = 3
	b := setupDelivery(t, cfg)
	recv := newReceiver(t, 500, 500, 200, 500, 500, 500)
	ep := b.endpoint(t, recv.srv.URL)
	events := appendEvents(t, b.store, b.ws, turn(1), turn(2), turn(3), turn(4), turn(5), turn(6), turn(7))

	var kinds []river.EventKind
	for _, ev := range events[:5] {
		res, _ := b.work(t, ep, ev)
		kinds = append(kinds, res.EventKind)
	}
	require.Equal(t, []river.EventKind{river.EventKindJobFailed, river.EventKindJobFailed, river.EventKindJobCompleted,
		river.EventKindJobFailed, river.EventKindJobFailed}, kinds)
	require.True(t, b.refresh(t, ep).Enabled, "the success reset the count")

	res, _ := b.work(t, ep, events[5])
	require.Equal(t, river.EventKindJobCancelled, res.EventKind, "the third failure in a row disables and cancels")
	stored := b.refresh(t, ep)
	require.False(t, stored.Enabled)
	require.Equal(t, 3, stored.ConsecutiveFailures)
	var reason string
	require.NoError(t, b.store.Pool().QueryRow(context.Background(),
		`SELECT disabled_reason FROM webhook_endpoints WHERE id = $1 AND disabled_at IS NOT NULL`, ep.ID).Scan(&reason))
	require.Contains(t, reason, "3 consecutive failed deliveries")

	res, _ = b.work(t, ep, events[6])
	require.Equal(t, river.EventKindJobCancelled, res.EventKind)
	require.Len(t, recv.requests(), 6, "a disabled endpoint gets no request")
	require.Len(t, b.attempts(t, ep), 6, "and no attempt is recorded")

	enabled := true
	_, err := b.store.UpdateWebhookEndpoint(context.Background(), b.ws, ep.ID.String(), store.WebhookUpdate{Enabled: &enabled})
	require.NoError(t, err)
	require.Zero(t, b.refresh(t, ep).ConsecutiveFailures, "enabling clears the failure state")
}

func TestDeliveryToADeletedEndpointIsCancelled(t *testing.T) {
	t.Parallel()
	b := setupDelivery(t, testDelivery)
	recv := newReceiver(t, http.StatusOK)
	ep := b.endpoint(t, recv.srv.URL)
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]
	require.NoError(t, b.store.DeleteWebhookEndpoint(context.Background(), b.ws, ep.ShortID))
	res, _ := b.work(t, ep, ev)
	require.Equal(t, river.EventKindJobCancelled, res.EventKind)
	require.Empty(t, recv.requests())
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	base := 5 * time.Second
	for attempt, want := range map[int]time.Duration{
		1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second, 5: 80 * time.Second,
		10: 2560 * time.Second, 11: time.Hour, 50: time.Hour,
	} {
		require.Equal(t, want, Backoff(base, attempt), "attempt %d", attempt)
	}
}

// syncBuffer is a server log the test can read while the deliverer writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// failingResolver answers no lookup, as for a host that does not exist.
func failingResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
	}}
}

// TestDeliveryFailureClasses: each way a delivery fails, produced by a real failing receiver,
// is recorded as a short class (and the status code when there is one) that never names an
// address or a port; the detail is in the server log.
func TestDeliveryFailureClasses(t *testing.T) {
	t.Parallel()
	serve := func(h http.HandlerFunc) *httptest.Server {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv
	}
	closedPort := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		return "http://" + addr + "/hook"
	}
	var hits atomic.Int32
	counting := serve(func(http.ResponseWriter, *http.Request) { hits.Add(1) })
	_, countingPort, err := net.SplitHostPort(counting.Listener.Addr().String())
	require.NoError(t, err)
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(untrusted.Close)

	allowPrivate := netguard.Guard{AllowPrivate: true, Resolver: failingResolver()}
	for _, tc := range []struct {
		name  string
		url   string
		guard netguard.Guard
		class string
		code  int
	}{
		{"closed port", closedPort(), allowPrivate, FailureConnectionRefused, 0},
		{"hangs past the time-out", serve(func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // then net/http notices the client leaving
			<-r.Context().Done()
		}).URL, allowPrivate, FailureTimeout, 0},
		{"untrusted certificate", untrusted.URL, allowPrivate, FailureTLS, 0},
		{"unresolvable host", "http://nowhere.invalid:8080/hook", allowPrivate, FailureDNS, 0},
		{"500", serve(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }).URL, allowPrivate, FailureHTTPStatus, 500},
		{"connection closed without an answer", serve(func(w http.ResponseWriter, _ *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}).URL, allowPrivate, FailureConnection, 0},
		// The production guard refuses at dial time (the URL check is passed by a receiver
		// whose DNS later answers an internal address), zones and mapped forms included.
		{"loopback", counting.URL, netguard.Guard{}, FailureBlockedAddress, 0},
		{"mapped loopback", "http://[::ffff:127.0.0.1]:" + countingPort + "/hook", netguard.Guard{}, FailureBlockedAddress, 0},
		{"zoned loopback", "http://[::1%25lo]:" + countingPort + "/hook", netguard.Guard{}, FailureBlockedAddress, 0},
		{"zoned link-local", "http://[fe80::1%25lo]:" + countingPort + "/hook", netguard.Guard{}, FailureBlockedAddress, 0},
		{"zoned metadata", "http://[fd00:ec2::254%25eth0]/latest/meta-data/", netguard.Guard{}, FailureBlockedAddress, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testDelivery
			// Only the hanging receiver needs the time-out to pass; every other case gets a
			// generous one, so that a slow TLS handshake on a loaded machine (-race) is not
			// taken for a timeout.
			cfg.Timeout = 30 * time.Second
			if tc.class == FailureTimeout {
				cfg.Timeout = 200 * time.Millisecond
			}
			log := &syncBuffer{}
			b := setupDeliveryWith(t, cfg, tc.guard.Client(cfg.Timeout), slog.New(slog.NewTextHandler(log, nil)))
			ep := b.endpoint(t, tc.url)
			ev := appendEvents(t, b.store, b.ws, turn(1))[0]
			_, workErr := b.work(t, ep, ev)
			require.Error(t, workErr)

			attempts := b.attempts(t, ep)
			require.Len(t, attempts, 1)
			a := attempts[0]
			require.False(t, a.Succeeded)
			require.NotNil(t, a.Error)
			require.Equal(t, tc.class, *a.Error, "detail: %v", workErr)
			if tc.code != 0 {
				require.Equal(t, tc.code, *a.ResponseCode)
			} else {
				require.Nil(t, a.ResponseCode)
			}
			u, err := url.Parse(tc.url)
			require.NoError(t, err)
			for _, leak := range []string{u.Hostname(), u.Port(), "127.0.0.1", "::1", "tcp", ":"} {
				if leak != "" {
					require.NotContains(t, *a.Error, leak)
				}
			}
			require.Contains(t, log.String(), "class="+tc.class, "the server log has the class")
			require.Contains(t, log.String(), ep.ID.String(), "and the endpoint")
			if tc.class != FailureHTTPStatus {
				require.Contains(t, log.String(), "could not reach the receiver", "and the detail")
			}
		})
	}
	t.Cleanup(func() { require.Zero(t, hits.Load(), "no refused or untrusted receiver got a delivery") })
}
