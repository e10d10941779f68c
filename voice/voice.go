// Package voice answers phone calls on telco_voice channels: a workspace phone number on the
// carrier account whose voice webhook is the channel's inbound URL. It is the channel's
// Provider (package channels) and runs the call flow in TwiML built with the carrier SDK's
// twiml package: the persona's greeting, the AI disclosure when it applies, then a speech
// loop where each thing the caller says is one turn of the deployed-agent runtime (package
// converse), spoken back; transfers to a person with a whispered summary, voicemail when
// nobody answers, and metering per started minute when the call ends.
//
// Every request is the carrier's, form-encoded and signed (X-Twilio-Signature over the exact
// URL); the routes under the inbound URL are:
//
//	""        a call comes in: greeting, disclosure, first <Gather>
//	gather    what the caller said (SpeechResult; empty after silence), ?turn=N
//	result    picks up a slow turn's answer after a holding phrase, ?turn=N&wait=K
//	dial      how a transfer ended (DialCallStatus), ?turn=N
//	whisper   what the person who answers a transfer hears first, ?turn=N
//	recorded  the message a caller left (RecordingUrl, RecordingDuration)
//	status    the call's status callback: closes the conversation and meters the call (and,
//	          ?send=ID, applies a campaign call's status to its campaign)
//	outbound  a campaign's call was answered (?send=ID, AnsweredBy): the voicemail drop to a
//	          machine, the agent's flow to a person (outbound.go)
package voice

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/channels"
	"switchboard/converse"
	"switchboard/sms"
	"switchboard/store"
)

// DefaultSlowAfter is how long a webhook waits for the model before it answers a holding
// phrase: the carrier waits about 15 s for TwiML, and a caller should not hear a long silence.
const DefaultSlowAfter = 5 * time.Second

// Service carries telco_voice traffic.
type Service struct {
	store     *store.Store
	carrier   *sms.Provider
	agents    *converse.Service
	chans     *channels.Service
	publicURL string
	now       func() time.Time
	log       *slog.Logger

	// SlowAfter is how long a turn's webhook waits for the model (DefaultSlowAfter); tests
	// shorten it to exercise the holding phrase and <Redirect>.
	SlowAfter time.Duration
	// TurnTimeout bounds one turn's model call; an answer later than this is a failed turn.
	TurnTimeout time.Duration

	turns sync.WaitGroup // turns running, for Wait
}

// New returns the voice provider. publicURL is PUBLIC_BASE_URL (the media URLs of
// recordings are built on it); now is the clock of business hours (time.Now when nil).
func New(st *store.Store, carrier *sms.Provider, agents *converse.Service, chans *channels.Service, publicURL string, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, carrier: carrier, agents: agents, chans: chans, publicURL: strings.TrimSuffix(publicURL, "/"), now: now, log: log,
		SlowAfter: DefaultSlowAfter, TurnTimeout: 2 * time.Minute}
}

// Wait waits for the turns still running (a graceful shutdown, tests).
func (s *Service) Wait() { s.turns.Wait() }

const voiceKeys = "phone_number, region"

// Prepare checks a voice channel's settings with the SMS number rules: a valid number
// (normalized to E.164), not another workspace's, on this server's carrier account.
func (s *Service) Prepare(ctx context.Context, ws uuid.UUID, w *store.ChannelWrite, cfg *channels.Config) (channels.Status, error) {
	for k := range cfg.Plain {
		if k != "phone_number" && k != "region" && k != "number_sid" {
			return channels.Status{}, apierr.Invalid("config."+k, "unknown_parameter", "A telco_voice channel has no setting %q: its settings are %s.", k, voiceKeys)
		}
	}
	if len(cfg.Secrets) > 0 {
		return channels.Status{}, apierr.Invalid("config", "unknown_parameter", "A telco_voice channel takes no credentials: it uses this server's carrier account (TWILIO_*). Its settings are %s.", voiceKeys)
	}
	region, _, err := cfg.Str("region")
	if err != nil {
		return channels.Status{}, err
	}
	number, ok, err := cfg.Str("phone_number")
	if err != nil {
		return channels.Status{}, err
	}
	if !ok || strings.TrimSpace(number) == "" {
		return channels.Status{}, apierr.Invalid("config.phone_number", "missing_parameter", "config.phone_number is required: the channel's number in E.164, such as +14155550100.")
	}
	e164, err := sms.NormalizeE164(number, strings.ToUpper(region))
	if err != nil {
		return channels.Status{}, apierr.Invalid("config.phone_number", "invalid_value", "config.phone_number: %s", err.Error())
	}
	cfg.Set("phone_number", e164)
	w.Address = &e164
	bought, elsewhere, err := s.store.NumberOwner(ctx, ws, e164)
	if err != nil {
		return channels.Status{}, err
	}
	if elsewhere {
		return channels.Status{}, apierr.Conflict("number_taken", "The number %s is already connected as a channel, here or in another workspace.", e164)
	}
	delete(cfg.Plain, "number_sid")
	if !s.carrier.Configured() {
		return channels.NeedsSetup("This server has no carrier account: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, restart, then PATCH this channel to check again."), nil
	}
	sid := bought
	if sid == "" {
		n, found, err := s.carrier.FindNumber(ctx, e164)
		if err != nil {
			s.log.WarnContext(ctx, "looking up a number at the carrier", slog.String("number", e164), slog.String("error", err.Error()))
			return channels.NeedsSetup("The carrier could not be reached to look up " + e164 + ": PATCH this channel to try again."), nil
		}
		if !found {
			return channels.NeedsSetup("The number " + e164 + " is not on this server's carrier account: buy it through /api/phone-numbers or add it to the account, then PATCH this channel."), nil
		}
		sid = n.SID
	}
	cfg.Set("number_sid", sid)
	return channels.Status{Connected: true}, nil
}

// Connected points the number's voice webhook at the inbound URL and its call status
// callback at .../status. The default PUBLIC_BASE_URL (localhost) is never sent: it would
// replace a working webhook with one the carrier cannot reach (the README says where to
// paste the URL by hand).
func (s *Service) Connected(ctx context.Context, c store.Channel, cfg *channels.Config) {
	if !s.carrier.Configured() {
		return
	}
	if u, err := url.Parse(s.publicURL); err != nil || u.Hostname() == "localhost" || u.Hostname() == "127.0.0.1" {
		return
	}
	sid, _, _ := cfg.Str("number_sid")
	if sid == "" {
		return
	}
	in := s.chans.InboundURL(c)
	if err := s.carrier.ConfigureVoice(ctx, sid, in, in+"/status"); err != nil {
		s.log.WarnContext(ctx, "pointing the number's voice webhook at the channel", slog.String("channel", c.ID.String()), slog.String("error", err.Error()))
	}
}

// Hook answers the carrier's requests to a voice channel, once their signature verifies.
func (s *Service) Hook(ctx context.Context, c store.Channel, _ *channels.Config, req channels.Request) (channels.Answer, error) {
	handle, ok := routes[req.Sub]
	if !ok {
		return channels.Answer{}, apierr.NotFound("", "not_found", "A telco_voice channel's inbound URL has no %q route.", req.Sub)
	}
	if req.Method != http.MethodPost {
		return channels.Answer{}, &apierr.Error{Kind: apierr.KindMethodNotAllowed, Code: "method_not_allowed", Message: "The carrier's webhooks are POST requests."}
	}
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return channels.Answer{}, apierr.Invalid("", "invalid_webhook", "The webhook body must be application/x-www-form-urlencoded, as the carrier sends it.")
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return channels.Answer{}, apierr.Invalid("", "invalid_webhook", "The webhook body could not be read as a form.")
	}
	if !s.carrier.ValidSignature(req.URL, form, req.Header.Get("X-Twilio-Signature")) {
		s.log.WarnContext(ctx, "refused a voice webhook: bad signature", slog.String("channel", c.ID.String()), slog.String("route", req.Sub))
		return channels.Answer{}, channels.ErrSignature
	}
	call, err := sms.CallFrom(form)
	if err != nil {
		return channels.Answer{}, apierr.Invalid("", "invalid_webhook", "%s", err.Error())
	}
	f := &flow{s: s, c: c, form: form, query: req.Query, call: call}
	doc, err := handle(f, ctx)
	if err != nil {
		return channels.Answer{}, err
	}
	return channels.Answer{ContentType: sms.TwiMLContentType, Body: doc}, nil
}
