package benchkit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Receiver is a webhook endpoint that checks every delivery's Standard Webhooks signature and
// counts the distinct deliveries (by webhook-id), the duplicates and the bad signatures.
type Receiver struct {
	Secret []byte

	mu        sync.Mutex
	seen      map[string]bool
	first     time.Time
	last      time.Time
	lags      []time.Duration // arrival - the event's created_at
	dupes     int
	badSig    int
	malformed int
}

// NewReceiver is an empty Receiver; set its Secret (or call Register) before deliveries come.
func NewReceiver() *Receiver { return &Receiver{seen: map[string]bool{}} }

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil || r.URL.Path != "/hook" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id, ts, sig := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature")
	rc.mu.Lock()
	secret := rc.Secret
	rc.mu.Unlock()
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	valid := false
	for _, s := range strings.Fields(sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			valid = true
		}
	}
	created, okTime := CreatedAt(body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case !valid:
		rc.badSig++
		w.WriteHeader(http.StatusUnauthorized) // a real receiver refuses it; the server will retry
		return
	case !okTime:
		rc.malformed++
	case rc.seen[id]:
		rc.dupes++
	default:
		rc.seen[id] = true
		if rc.first.IsZero() {
			rc.first = now
		}
		rc.last = now
		rc.lags = append(rc.lags, now.Sub(created))
	}
	w.WriteHeader(http.StatusNoContent)
}

// Count is the distinct deliveries so far.
func (rc *Receiver) Count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.seen)
}

// ReceiverStats is what a Receiver saw.
type ReceiverStats struct {
	Delivered, Dupes, BadSig, Malformed int
	First, Last                         time.Time
	Lags                                []time.Duration // of the distinct deliveries, in arrival order
}

// Stats is a copy of what the receiver saw so far.
func (rc *Receiver) Stats() ReceiverStats {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return ReceiverStats{Delivered: len(rc.seen), Dupes: rc.dupes, BadSig: rc.badSig, Malformed: rc.malformed,
		First: rc.first, Last: rc.last, Lags: append([]time.Duration(nil), rc.lags...)}
}

// Listen serves the receiver on 127.0.0.1 and registers it (POST /v1/webhooks, every event)
// with the server's key, keeping the endpoint's secret. The returned func stops it.
func (rc *Receiver) Listen(ctx context.Context, server, key string) (stop func(), err error) {
	return rc.ListenFor(ctx, server, key, nil)
}

// ListenFor is Listen with the endpoint subscribed to eventTypes only (nil: every event).
func (rc *Receiver) ListenFor(ctx context.Context, server, key string, eventTypes []string) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	reg := map[string]any{"url": fmt.Sprintf("http://%s/hook", ln.Addr()), "description": "bench receiver"}
	if len(eventTypes) > 0 {
		reg["event_types"] = eventTypes
	}
	body, err := json.Marshal(reg)
	if err != nil {
		srv.Close()
		return nil, err
	}
	var ep struct {
		Secret string `json:"secret"`
	}
	if err := Call(ctx, http.MethodPost, strings.TrimSuffix(server, "/")+"/v1/webhooks", key, "application/json", body, &ep); err != nil {
		srv.Close()
		return nil, fmt.Errorf("register the webhook: %w", err)
	}
	if !strings.HasPrefix(ep.Secret, "whsec_") {
		srv.Close()
		return nil, fmt.Errorf("webhook creation answered no whsec_ secret")
	}
	secret, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(ep.Secret, "whsec_"))
	if err != nil {
		srv.Close()
		return nil, err
	}
	rc.mu.Lock()
	rc.Secret = secret
	rc.mu.Unlock()
	return func() { srv.Close() }, nil
}

// CreatedAt reads an event envelope's "created_at" without decoding the whole envelope (the
// subscribers must cost the machine as little as possible).
func CreatedAt(data []byte) (time.Time, bool) {
	const key = `"created_at":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	return t, err == nil
}
