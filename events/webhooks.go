package events

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/netguard"
	"switchboard/store"
)

// NewSecret returns a webhook signing secret: `whsec_` and base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// Sign returns the Standard Webhooks signature header value `v1,<base64 HMAC-SHA256>` of
// `id.timestamp.body`, keyed with the base64-decoded secret.
func Sign(secret, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", fmt.Errorf("webhook secret is not base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, timestamp.Unix())
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// DeliveryArgs is the job of delivering one event to one endpoint.
type DeliveryArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	EndpointID  uuid.UUID `json:"endpoint_id"`
	EventSeq    int64     `json:"event_seq"`
}

// Kind names the job type in the queue.
func (DeliveryArgs) Kind() string { return "webhook_delivery" }

// MaxAttempts of a delivery, from the contract: then it is abandoned (and recorded).
const MaxAttempts = 6

// InsertOpts puts deliveries on their own queue, so slow receivers do not hold other work.
func (DeliveryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: MaxAttempts, Queue: DeliveryQueue}
}

// DeliveryQueue is the job queue deliveries run on.
const DeliveryQueue = "webhooks"

// DeliveryConfig tunes deliveries.
type DeliveryConfig struct {
	// RetryBase is the wait after the first failure; it doubles per attempt up to an hour.
	RetryBase time.Duration
	// Timeout bounds one delivery attempt.
	Timeout time.Duration
	// DisableAfter consecutive failed attempts disables the endpoint.
	DisableAfter int
}

// DefaultDeliveryConfig is the contract's schedule (5s, 10s, 20s, ... capped at 1h) with a
// 15 s time-out, disabling an endpoint after 15 consecutive failures: two and a half events'
// worth of full retry schedules.
var DefaultDeliveryConfig = DeliveryConfig{RetryBase: 5 * time.Second, Timeout: 15 * time.Second, DisableAfter: 15}

// Deliverer is the delivery job's worker.
type Deliverer struct {
	river.WorkerDefaults[DeliveryArgs]
	store  *store.Store
	client *http.Client
	cfg    DeliveryConfig
	log    *slog.Logger
}

// NewDeliverer returns the worker; client must guard its dials (netguard).
func NewDeliverer(st *store.Store, client *http.Client, cfg DeliveryConfig, log *slog.Logger) *Deliverer {
	return &Deliverer{store: st, client: client, cfg: cfg, log: log}
}

// NextRetry implements the contract's backoff.
func (d *Deliverer) NextRetry(job *river.Job[DeliveryArgs]) time.Time {
	return time.Now().Add(Backoff(d.cfg.RetryBase, job.Attempt))
}

// Backoff is the wait after the given failed attempt: base, 2·base, 4·base, ... at most 1 h.
func Backoff(base time.Duration, attempt int) time.Duration {
	wait := base
	for i := 1; i < attempt && wait < time.Hour; i++ {
		wait *= 2
	}
	return min(wait, time.Hour)
}

// Timeout bounds the job a little above the HTTP time-out.
func (d *Deliverer) Timeout(*river.Job[DeliveryArgs]) time.Duration {
	return d.cfg.Timeout + 5*time.Second
}

// Work delivers the event once. A non-2xx answer or a failure to reach the receiver is an
// error, and the queue retries on the backoff schedule; an endpoint deleted or disabled in
// the meantime cancels the job.
func (d *Deliverer) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	a := job.Args
	ep, ev, err := d.store.DeliveryTarget(ctx, a.WorkspaceID, a.EndpointID, a.EventSeq)
	var nf *store.NotFoundError
	if errors.As(err, &nf) && nf.What == "webhook endpoint" {
		return river.JobCancel(errors.New("endpoint deleted"))
	}
	if err != nil {
		return err
	}
	if !ep.Enabled {
		return river.JobCancel(errors.New("endpoint disabled"))
	}
	start := time.Now()
	code, deliveryErr := d.post(ctx, ep, ev)
	attempt := store.WebhookAttempt{EndpointID: ep.ID, WorkspaceID: ep.WorkspaceID, EventID: ev.ShortID, EventType: ev.Type,
		Attempt: job.Attempt, Succeeded: deliveryErr == nil, Duration: time.Since(start)}
	if code != 0 {
		attempt.ResponseCode = &code
	}
	if deliveryErr != nil {
		// The attempt log is read through the API: it gets the class only. The detail names
		// addresses and ports (the receiver's, ours), which would turn the log into a port
		// scanner; it goes to the server log.
		class := FailureClass(deliveryErr)
		attempt.Error = &class
		d.log.Warn("webhook delivery failed", slog.String("endpoint_id", ep.ID.String()), slog.String("workspace_id", ep.WorkspaceID.String()),
			slog.String("event_id", ev.ShortID), slog.Int("attempt", job.Attempt), slog.String("class", class), slog.String("error", deliveryErr.Error()))
	}
	disabled, err := d.store.RecordWebhookAttempt(context.WithoutCancel(ctx), attempt, d.cfg.DisableAfter)
	if err != nil {
		return err
	}
	switch {
	case deliveryErr == nil:
		return nil
	case disabled:
		return river.JobCancel(fmt.Errorf("endpoint disabled after repeated failures: %w", deliveryErr))
	default:
		return deliveryErr
	}
}

// post sends the signed envelope and returns the receiver's status code.
func (d *Deliverer) post(ctx context.Context, ep store.WebhookEndpoint, ev store.Event) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	now := time.Now()
	sig, err := Sign(ep.Secret, ev.ShortID, now, ev.Envelope)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(ev.Envelope))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard-Webhooks/1.0")
	req.Header.Set("webhook-id", ev.ShortID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("could not reach the receiver: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%w: the receiver answered %d", errStatus, resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// The failure classes an attempt records, as GET /v1/webhooks/{id}/attempts shows them.
const (
	FailureHTTPStatus        = "http_status"        // the receiver answered, not 2xx (response_code says what)
	FailureBlockedAddress    = "blocked_address"    // the URL or an address it resolves to is not allowed (netguard)
	FailureDNS               = "dns_error"          // the host does not resolve
	FailureConnectionRefused = "connection_refused" // nothing listens on the port
	FailureTimeout           = "timeout"            // no connection or no answer within the time-out
	FailureTLS               = "tls_error"          // handshake failed: untrusted or invalid certificate, protocol error
	FailureConnection        = "connection_error"   // anything else: reset, closed, unreachable network
)

var errStatus = errors.New("non-2xx answer")

// FailureClass names what went wrong in a delivery, without any address, port or other
// detail of the network.
func FailureClass(err error) string {
	var (
		dnsErr     *net.DNSError
		verifyErr  *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
		netErr     net.Error
	)
	switch {
	case errors.Is(err, errStatus):
		return FailureHTTPStatus
	case errors.Is(err, netguard.ErrBlocked):
		return FailureBlockedAddress
	case errors.As(err, &dnsErr):
		return FailureDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailureConnectionRefused
	case errors.As(err, &verifyErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr),
		errors.As(err, &recordErr), errors.As(err, &alertErr):
		return FailureTLS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	default:
		return FailureConnection
	}
}

// Relay turns outbox events into delivery jobs. Every replica runs one; they share the work
// through SKIP LOCKED, and each event's jobs are inserted in the transaction that marks it
// dispatched, so an event fans out exactly once, even across crashes.
type Relay struct {
	store *store.Store
	jobs  *river.Client[pgx.Tx]
	hub   *Hub
	log   *slog.Logger
	// Interval is the sweep period when no notice wakes the relay.
	Interval time.Duration
}

// NewRelay returns a relay inserting jobs with the given queue client.
func NewRelay(st *store.Store, jobs *river.Client[pgx.Tx], hub *Hub, log *slog.Logger) *Relay {
	return &Relay{store: st, jobs: jobs, hub: hub, log: log, Interval: time.Second}
}

const relayBatch = 500

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) {
	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		for {
			n, err := r.once(ctx)
			if err != nil && ctx.Err() == nil {
				r.log.Error("relaying events to webhooks", slog.String("error", err.Error()))
			}
			if err != nil || n < relayBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.hub.wake:
		case <-tick.C:
		}
	}
}

func (r *Relay) once(ctx context.Context) (int, error) {
	var claimed int
	err := r.store.InTx(ctx, func(tx *store.Tx) error {
		batch, err := tx.ClaimUndispatched(ctx, relayBatch)
		if err != nil {
			return err
		}
		claimed = len(batch)
		var params []river.InsertManyParams
		for _, d := range batch {
			for _, ep := range d.EndpointIDs {
				params = append(params, river.InsertManyParams{Args: DeliveryArgs{WorkspaceID: d.WorkspaceID, EndpointID: ep, EventSeq: d.Seq}})
			}
		}
		if len(params) == 0 {
			return nil
		}
		_, err = r.jobs.InsertManyTx(ctx, tx.Pgx(), params)
		return err
	})
	return claimed, err
}
