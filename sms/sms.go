// Package sms is the SMS and phone-number provider adapter, on the provider's official Go
// SDK (github.com/twilio/twilio-go): sending a campaign's messages and replies, searching,
// buying, releasing and configuring numbers, and reading the provider's signed webhooks
// (inbound.go). Tests point the SDK at an httptest server (Config.BaseURL), so the
// real SDK speaks the real wire protocol to a fake.
//
// Without credentials the provider is disabled: every call fails with a clear 409
// `sms_provider_not_configured` naming the variables to set.
package sms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/twilio/twilio-go"
	twclient "github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"switchboard/apierr"
)

// Config is the provider's account (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN) and, for tests
// and regional proxies, the base URL its API is reached at (TWILIO_BASE_URL; empty: the
// SDK's own https://api.twilio.com).
type Config struct {
	AccountSID string
	AuthToken  string
	BaseURL    string
	Timeout    time.Duration // bounds one provider call; 0 means 15 s
}

// Provider talks to the SMS provider. The zero value and New without credentials are a
// disabled provider.
type Provider struct {
	rest *twilio.RestClient
	// authToken is kept beside the client because inbound webhooks are signed with it
	// (ValidSignature); the SDK's client does not expose its credentials.
	authToken string
}

// Available is a number the provider offers for purchase.
type Available struct {
	PhoneNumber  string `json:"phone_number"`
	FriendlyName string `json:"friendly_name"`
	Locality     string `json:"locality"`
	Region       string `json:"region"`
	Country      string `json:"country"`
}

// New returns the provider; disabled when the account SID or token is empty.
func New(cfg Config) (*Provider, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return &Provider{}, nil
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	httpClient := &http.Client{Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if cfg.BaseURL != "" {
		base, err := url.Parse(strings.TrimSuffix(cfg.BaseURL, "/"))
		if err != nil || base.Scheme == "" || base.Host == "" {
			return nil, fmt.Errorf("TWILIO_BASE_URL %q is not an absolute URL", cfg.BaseURL)
		}
		httpClient.Transport = rebase{base: base, next: http.DefaultTransport}
	}
	c := &twclient.Client{Credentials: twclient.NewCredentials(cfg.AccountSID, cfg.AuthToken), HTTPClient: httpClient}
	c.SetAccountSid(cfg.AccountSID)
	return &Provider{rest: twilio.NewRestClientWithParams(twilio.ClientParams{Client: c}), authToken: cfg.AuthToken}, nil
}

// rebase sends every request of the SDK to base (same path and query, under base's path).
type rebase struct {
	base *url.URL
	next http.RoundTripper
}

func (r rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host = r.base.Scheme, r.base.Host
	out.URL.Path = r.base.Path + req.URL.Path
	out.Host = r.base.Host
	return r.next.RoundTrip(out)
}

// Configured reports whether the provider has credentials.
func (p *Provider) Configured() bool { return p != nil && p.rest != nil }

// ErrNotConfigured is the failure of every call of a disabled provider.
func ErrNotConfigured() *apierr.Error {
	return apierr.Conflict("sms_provider_not_configured",
		"No SMS provider is configured on this server: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (and restart) to send SMS and buy phone numbers.")
}

// Outbound is one SMS to send. StatusCallback, when set, is the URL the provider POSTs the
// message's delivery status to (queued, sent, delivered, undelivered, failed ...).
type Outbound struct {
	From, To, Body string
	StatusCallback string
}

// Send sends one SMS and returns the provider's message id.
func (p *Provider) Send(ctx context.Context, from, to, body string) (string, error) {
	return p.SendMessage(ctx, Outbound{From: from, To: to, Body: body})
}

// SendMessage sends m and returns the provider's message id (its SID).
func (p *Provider) SendMessage(ctx context.Context, m Outbound) (string, error) {
	if !p.Configured() {
		return "", ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	params := (&openapi.CreateMessageParams{}).SetTo(m.To).SetFrom(m.From).SetBody(m.Body)
	if m.StatusCallback != "" {
		params.SetStatusCallback(m.StatusCallback)
	}
	msg, err := p.rest.Api.CreateMessage(params)
	if err != nil {
		return "", providerError(err)
	}
	return deref(msg.Sid), nil
}

// FindSent looks for an SMS from from to to with exactly body that the account created at
// or after since, and returns its id: whether a send whose answer was never recorded (the
// process died during the call) reached the carrier. Only the newest page is read (the
// provider lists newest first), which holds any message of the last minutes between two
// numbers.
func (p *Provider) FindSent(ctx context.Context, from, to, body string, since time.Time) (string, bool, error) {
	if !p.Configured() {
		return "", false, ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	params := (&openapi.ListMessageParams{}).SetFrom(from).SetTo(to).SetPageSize(50).SetLimit(50)
	found, err := p.rest.Api.ListMessage(params)
	if err != nil {
		return "", false, providerError(err)
	}
	for _, m := range found {
		created, err := time.Parse(time.RFC1123Z, deref(m.DateCreated))
		if err != nil || created.Before(since) || deref(m.Body) != body {
			continue
		}
		return deref(m.Sid), true, nil
	}
	return "", false, nil
}

// Search lists numbers available in country (ISO 3166 alpha-2), optionally in an area code
// and containing a pattern, up to limit.
func (p *Provider) Search(ctx context.Context, country string, areaCode int, contains string, limit int) ([]Available, error) {
	if !p.Configured() {
		return nil, ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	params := (&openapi.ListAvailablePhoneNumberLocalParams{}).SetSmsEnabled(true).SetLimit(limit).SetPageSize(limit)
	if areaCode > 0 {
		params.SetAreaCode(areaCode)
	}
	if contains != "" {
		params.SetContains(contains)
	}
	found, err := p.rest.Api.ListAvailablePhoneNumberLocal(country, params)
	if err != nil {
		return nil, providerError(err)
	}
	out := make([]Available, 0, len(found))
	for _, f := range found {
		a := Available{PhoneNumber: deref(f.PhoneNumber), FriendlyName: deref(f.FriendlyName), Locality: deref(f.Locality),
			Region: deref(f.Region), Country: deref(f.IsoCountry)}
		if a.Country == "" {
			a.Country = country
		}
		if a.PhoneNumber != "" {
			out = append(out, a)
		}
	}
	return out, nil
}

// Buy purchases a number and returns its provider id.
func (p *Provider) Buy(ctx context.Context, e164 string) (string, error) {
	if !p.Configured() {
		return "", ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	n, err := p.rest.Api.CreateIncomingPhoneNumber((&openapi.CreateIncomingPhoneNumberParams{}).SetPhoneNumber(e164))
	if err != nil {
		return "", providerError(err)
	}
	return deref(n.Sid), nil
}

// Release gives a purchased number back to the provider.
func (p *Provider) Release(ctx context.Context, sid string) error {
	if !p.Configured() {
		return ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := p.rest.Api.DeleteIncomingPhoneNumber(sid, nil); err != nil {
		var rest *twclient.TwilioRestError
		if errors.As(err, &rest) && rest.Status == http.StatusNotFound {
			return nil // already gone at the provider
		}
		return providerError(err)
	}
	return nil
}

// Number is a phone number on the provider account, with where its messaging webhook points.
type Number struct {
	SID            string
	PhoneNumber    string
	SmsURL         string
	StatusCallback string
}

// FindNumber looks e164 up on the account; false when the account does not hold it.
func (p *Provider) FindNumber(ctx context.Context, e164 string) (Number, bool, error) {
	if !p.Configured() {
		return Number{}, false, ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return Number{}, false, err
	}
	// The provider's PhoneNumber filter also matches partial numbers, so the list can hold
	// more than the one asked for: only an exact match counts.
	found, err := p.rest.Api.ListIncomingPhoneNumber((&openapi.ListIncomingPhoneNumberParams{}).SetPhoneNumber(e164).SetPageSize(50))
	if err != nil {
		return Number{}, false, providerError(err)
	}
	for _, n := range found {
		if deref(n.PhoneNumber) == e164 {
			return Number{SID: deref(n.Sid), PhoneNumber: e164, SmsURL: deref(n.SmsUrl), StatusCallback: deref(n.StatusCallback)}, true, nil
		}
	}
	return Number{}, false, nil
}

// ConfigureSMS points the messaging webhook of the number sid at smsURL: the provider POSTs
// every inbound SMS to that number there.
func (p *Provider) ConfigureSMS(ctx context.Context, sid, smsURL string) error {
	if !p.Configured() {
		return ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	params := (&openapi.UpdateIncomingPhoneNumberParams{}).SetSmsUrl(smsURL).SetSmsMethod(http.MethodPost)
	if _, err := p.rest.Api.UpdateIncomingPhoneNumber(sid, params); err != nil {
		return providerError(err)
	}
	return nil
}

// providerError turns the provider's refusal into a 4xx the caller can read (its message
// and code), and anything else (network, decoding) into an upstream failure.
func providerError(err error) error {
	var rest *twclient.TwilioRestError
	if errors.As(err, &rest) {
		if rest.Status >= 400 && rest.Status < 500 {
			return apierr.Unprocessable("", "provider_refused", "The SMS provider refused: %s (provider code %d).", rest.Message, rest.Code)
		}
		return &apierr.Error{Kind: apierr.KindUpstream, Code: "provider_error", Message: "The SMS provider failed: " + rest.Message, Err: err}
	}
	return &apierr.Error{Kind: apierr.KindUpstream, Code: "provider_unreachable", Message: "The SMS provider could not be reached.", Err: err}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
