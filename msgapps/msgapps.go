// Package msgapps carries the four messaging apps, neutral values msgapp_1 … msgapp_4, on
// their own wire protocols:
//
//   - msgapp_1: WhatsApp Business Cloud API (whatsapp.go)
//   - msgapp_2: Facebook Messenger, the Send API (messenger.go)
//   - msgapp_3: Instagram Messaging (instagram.go)
//   - msgapp_4: Telegram Bot API (telegram.go)
//
// The first three share Meta's webhook scheme and Graph API (meta.go): a GET handshake
// answered from the channel's verify token, POSTs signed with X-Hub-Signature-256 (HMAC-SHA256
// of the raw body with the app secret), and a 24-hour customer-service window. Telegram's bot
// webhook is registered by this server (setWebhook, with a secret token it checks on every
// update). Each app has a Provider (provider.go) that the channel layer carries: the signed
// webhook, the contact by app user id, the durable reply job, the app's formatting and length
// limits, and a per-message price.
//
// The clients are plain net/http JSON: each app needs one or two endpoints, and the Go SDKs
// for them are unofficial, larger than the calls they would replace, and hide the exact JSON
// the tests check at the wire.
package msgapps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"switchboard/apierr"
)

// Config is where the apps' APIs are reached (a fake in tests).
type Config struct {
	// GraphURL is META_GRAPH_URL: Meta's Graph API with its version (WhatsApp, Messenger,
	// Instagram).
	GraphURL string
	// InstagramURL is INSTAGRAM_GRAPH_URL: the Instagram API with Instagram Login, with its
	// version.
	InstagramURL string
	// TelegramURL is TELEGRAM_API_URL: the Telegram Bot API (a local Bot API server, or a fake).
	TelegramURL string
	// HTTP is the client the apps are called with; nil: one with a 30-second timeout.
	HTTP *http.Client
}

// Defaults of Config.
const (
	DefaultGraphURL     = "https://graph.facebook.com/v21.0"
	DefaultInstagramURL = "https://graph.instagram.com/v21.0"
	DefaultTelegramURL  = "https://api.telegram.org"
)

func (c Config) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c Config) graphURL() string { return strings.TrimSuffix(or(c.GraphURL, DefaultGraphURL), "/") }
func (c Config) instagramURL() string {
	return strings.TrimSuffix(or(c.InstagramURL, DefaultInstagramURL), "/")
}
func (c Config) telegramURL() string {
	return strings.TrimSuffix(or(c.TelegramURL, DefaultTelegramURL), "/")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// postJSON posts body as JSON and decodes a 2xx answer into out; any other answer is an
// upstream error carrying the app's own words (errText reads them from the answer).
func postJSON(ctx context.Context, client *http.Client, url string, header http.Header, body, out any, errText func([]byte) string) error {
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		msg := errText(answer)
		if msg == "" {
			msg = fmt.Sprintf("HTTP %d", resp.StatusCode)
		}
		return &apierr.Error{Kind: apierr.KindUpstream, Code: "app_refused", Message: "The app refused the message: " + msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("reading the app's answer: %w", err)
	}
	return nil
}
