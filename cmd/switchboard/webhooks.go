package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// developmentKey is the key `make run` seeds (scripts/run.sh sets it as BOOTSTRAP_API_KEY).
const developmentKey = "sk-svc_development-only-key-00000000000000000000"

// listenDescription marks the endpoints `webhooks listen` registers.
const listenDescription = "switchboard webhooks listen (temporary; removed when the listener exits)"

func webhooksCommand(ctx context.Context, cfg config, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "listen" {
		return usageError{"webhooks needs a subcommand: listen"}
	}
	fs := flag.NewFlagSet("webhooks listen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", getenv.or("SWITCHBOARD_URL", localURL(cfg.Addr)), "the server's address (SWITCHBOARD_URL)")
	key := fs.String("key", getenv.or("SWITCHBOARD_API_KEY", getenv.or("BOOTSTRAP_API_KEY", developmentKey)),
		"an API key of the workspace (SWITCHBOARD_API_KEY; default BOOTSTRAP_API_KEY, else the development key of `make run`)")
	listen := fs.String("listen", "127.0.0.1:0", "the local address receiving deliveries (port 0: any free port)")
	types := fs.String("events", "*", "comma-separated event types to subscribe to")
	showSecret := fs.Bool("show-secret", false, "print the endpoint's signing secret in full (masked by default: terminals get recorded and shared)")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	l := &listener{api: strings.TrimRight(*server, "/"), key: *key, out: stdout, log: stderr, showSecret: *showSecret,
		client: &http.Client{Timeout: 30 * time.Second}}
	return l.run(ctx, *listen, strings.Split(*types, ","))
}

// localURL is the address of a server listening on addr (":8080" -> http://localhost:8080).
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://localhost:8080"
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// listener is `switchboard webhooks listen`: a temporary webhook endpoint of the key's
// workspace pointing at a local port, which verifies each delivery's Standard Webhooks
// signature and prints the event. The endpoint is removed when the listener stops.
type listener struct {
	api, key   string
	out, log   io.Writer
	showSecret bool
	client     *http.Client
	mu         sync.Mutex // serializes output
}

type endpoint struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

func (l *listener) run(ctx context.Context, addr string, types []string) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (choose another with --listen)", addr, err)
	}
	defer ln.Close()
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	target := "http://" + net.JoinHostPort(host, port) + "/webhooks"

	l.removeLeftovers(ctx)
	ep, err := l.register(ctx, target, types)
	if err != nil {
		return err
	}
	wh, err := standardwebhooks.NewWebhook(ep.Secret)
	if err != nil {
		return fmt.Errorf("the server returned an unusable secret: %w", err)
	}
	srv := &http.Server{Handler: l.handler(wh), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	l.printf(l.log, "Ready. Endpoint %s of %s delivers to %s (events: %s); signatures are verified with its secret %s.\n"+
		"Cause an event in another terminal, e.g.:\n  curl -s %s/v1/responses -H \"Authorization: Bearer $KEY\" -H 'Content-Type: application/json' -d '{\"input\":\"hi\"}'\n"+
		"Press Ctrl-C to stop; the endpoint is removed then.\n",
		ep.ID, l.api, target, strings.Join(types, ","), l.secret(ep.Secret), l.api)

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if derr := l.remove(shutdown, ep.ID); derr != nil {
		return errors.Join(err, fmt.Errorf("remove endpoint %s: %w (delete it with DELETE /v1/webhooks/%s)", ep.ID, derr, ep.ID))
	}
	l.printf(l.log, "Removed endpoint %s.\n", ep.ID)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// secret is the signing secret as the listener prints it: masked unless --show-secret, since
// a terminal's output ends up in screen shares, recordings and pasted bug reports.
func (l *listener) secret(s string) string {
	if l.showSecret {
		return s
	}
	return maskSecret(s) + " (--show-secret prints it in full)"
}

// maskSecret keeps a webhook secret's prefix and last four characters (whsec_…wxyz): enough
// to tell two secrets apart, too little to sign with. A secret too short to keep four
// characters of shows none.
func maskSecret(s string) string {
	const prefix, tail = "whsec_", 4
	body, hasPrefix := strings.CutPrefix(s, prefix)
	shown := ""
	if hasPrefix {
		shown = prefix
	}
	if len(body) >= 4*tail {
		return shown + "…" + body[len(body)-tail:]
	}
	return shown + "…"
}

// register creates the temporary endpoint; a refusal is explained in terms of what to do.
func (l *listener) register(ctx context.Context, target string, types []string) (endpoint, error) {
	body, _ := json.Marshal(map[string]any{"url": target, "event_types": types, "description": listenDescription})
	var ep endpoint
	status, raw, err := l.call(ctx, http.MethodPost, "/v1/webhooks", body)
	if err != nil {
		return ep, fmt.Errorf("reach %s: %w (is the server running? `make run` starts one; --server sets its address)", l.api, err)
	}
	if status != http.StatusCreated {
		var e struct {
			Error struct{ Message, Code string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		msg := fmt.Sprintf("register a webhook endpoint at %s: %d %s", l.api, status, e.Error.Message)
		switch {
		case status == http.StatusUnauthorized:
			msg += " (pass a key of the workspace with --key or SWITCHBOARD_API_KEY)"
		case status == http.StatusBadRequest && e.Error.Code == "url_not_allowed":
			msg += " (the server refuses local webhook targets: start it with WEBHOOK_ALLOW_PRIVATE=1, as `make run` does in development)"
		}
		return ep, errors.New(msg)
	}
	if err := json.Unmarshal(raw, &ep); err != nil {
		return ep, fmt.Errorf("register a webhook endpoint: unreadable answer: %w", err)
	}
	return ep, nil
}

// removeLeftovers deletes the endpoints of earlier listeners that were killed before they
// could remove theirs (their local port no longer answers), so that the server stops
// retrying deliveries nobody receives. Failing to list is not fatal: register reports the
// real problem.
func (l *listener) removeLeftovers(ctx context.Context) {
	status, raw, err := l.call(ctx, http.MethodGet, "/v1/webhooks?limit=200", nil)
	if err != nil || status != http.StatusOK {
		return
	}
	var list struct {
		Data []struct {
			ID          string  `json:"id"`
			URL         string  `json:"url"`
			Description *string `json:"description"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return
	}
	for _, ep := range list.Data {
		if ep.Description == nil || *ep.Description != listenDescription || answers(ctx, ep.URL) {
			continue
		}
		if l.remove(ctx, ep.ID) == nil {
			l.printf(l.log, "Removed endpoint %s of an earlier listener that is gone (%s).\n", ep.ID, ep.URL)
		}
	}
}

// answers reports whether something listens at the host and port of a URL.
func answers(ctx context.Context, rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func (l *listener) remove(ctx context.Context, id string) error {
	status, raw, err := l.call(ctx, http.MethodDelete, "/v1/webhooks/"+id, nil)
	if err != nil {
		return err
	}
	if status != http.StatusNoContent && status != http.StatusNotFound {
		return fmt.Errorf("%d %s", status, bytes.TrimSpace(raw))
	}
	return nil
}

func (l *listener) call(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.api+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, raw, err
}

// handler verifies and prints each delivery. A delivery with a bad signature is refused
// (401) and reported, so the server retries it as it would for a real receiver.
func (l *listener) handler(wh *standardwebhooks.Webhook) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := wh.Verify(payload, r.Header); err != nil {
			l.printf(l.log, "%s  REFUSED delivery %s: signature not verified: %v\n",
				time.Now().UTC().Format(time.RFC3339), r.Header.Get("webhook-id"), err)
			http.Error(w, "signature not verified", http.StatusUnauthorized)
			return
		}
		var ev struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(payload, &ev)
		var pretty bytes.Buffer
		if json.Indent(&pretty, payload, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(payload)
		}
		l.printf(l.out, "%s  %s  %s  (signature verified)\n%s\n",
			time.Now().UTC().Format(time.RFC3339), ev.Type, ev.ID, pretty.String())
		w.WriteHeader(http.StatusNoContent)
	})
}

func (l *listener) printf(w io.Writer, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(w, format, args...)
}
