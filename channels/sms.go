package channels

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/phonenumbers"
	"switchboard/sms"
	"switchboard/store"
)

// SMS channel settings.
const (
	maxHelpText = 320 // two segments
	smsKeys     = "phone_number, region, help_text"
)

// Prepare checks an SMS channel's settings and decides its status: the number is valid
// (normalized to E.164 with libphonenumber), not another workspace's, and on this server's
// carrier account (bought through /api/phone-numbers, or found there).
func (p smsProvider) Prepare(ctx context.Context, ws uuid.UUID, w *store.ChannelWrite, cfg *Config) (Status, error) {
	s := p.s
	for k := range cfg.Plain {
		if k != "phone_number" && k != "region" && k != "help_text" && k != "number_sid" {
			return Status{}, apierr.Invalid("config."+k, "unknown_parameter", "An sms channel has no setting %q: its settings are %s.", k, smsKeys)
		}
	}
	if len(cfg.Secrets) > 0 {
		return Status{}, apierr.Invalid("config", "unknown_parameter", "An sms channel takes no credentials: it uses this server's carrier account (TWILIO_*). Its settings are %s.", smsKeys)
	}
	region, _, err := cfg.Str("region")
	if err != nil {
		return Status{}, err
	}
	number, ok, err := cfg.Str("phone_number")
	if err != nil {
		return Status{}, err
	}
	if !ok || strings.TrimSpace(number) == "" {
		return Status{}, apierr.Invalid("config.phone_number", "missing_parameter", "config.phone_number is required: the channel's number in E.164, such as +14155550100.")
	}
	e164, err := sms.NormalizeE164(number, strings.ToUpper(region))
	if err != nil {
		return Status{}, apierr.Invalid("config.phone_number", "invalid_value", "config.phone_number: %s", err.Error())
	}
	cfg.Set("phone_number", e164)
	w.Address = &e164
	if help, ok, err := cfg.Str("help_text"); err != nil {
		return Status{}, err
	} else if ok && (strings.TrimSpace(help) == "" || utf8.RuneCountInString(help) > maxHelpText) {
		return Status{}, apierr.Invalid("config.help_text", "invalid_value", "config.help_text must be 1 to %d characters.", maxHelpText)
	}
	bought, elsewhere, err := s.store.NumberOwner(ctx, ws, e164)
	if err != nil {
		return Status{}, err
	}
	if elsewhere {
		return Status{}, numberTaken(&e164)
	}
	delete(cfg.Plain, "number_sid")
	if !s.carrier.Configured() {
		return NeedsSetup("This server has no carrier account: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, restart, then PATCH this channel to check again."), nil
	}
	sid := bought
	if sid == "" {
		n, found, err := s.carrier.FindNumber(ctx, e164)
		if err != nil {
			s.log.WarnContext(ctx, "looking up a number at the carrier", slog.String("number", e164), slog.String("error", err.Error()))
			return NeedsSetup("The carrier could not be reached to look up " + e164 + ": PATCH this channel to try again."), nil
		}
		if !found {
			return NeedsSetup("The number " + e164 + " is not on this server's carrier account: buy it through /api/phone-numbers or add it to the account, then PATCH this channel."), nil
		}
		sid = n.SID
	}
	cfg.Set("number_sid", sid)
	return Status{Connected: true}, nil
}

// Connected points a connected SMS channel's number at its inbound URL, so that texts reach
// it without a visit to the carrier's console. The default PUBLIC_BASE_URL (localhost) is
// never sent, since it would replace a working webhook with one the carrier cannot reach.
func (p smsProvider) Connected(ctx context.Context, c store.Channel, cfg *Config) {
	s := p.s
	if !s.carrier.Configured() {
		return
	}
	if u, err := url.Parse(s.publicURL); err != nil || u.Hostname() == "localhost" {
		return
	}
	sid, _, _ := cfg.Str("number_sid")
	if sid == "" {
		return
	}
	if err := s.carrier.ConfigureSMS(ctx, sid, s.InboundURL(c)); err != nil {
		s.log.WarnContext(ctx, "pointing the number's messaging webhook at the channel", slog.String("channel", c.ID.String()), slog.String("error", err.Error()))
	}
}

// Hook answers the carrier's requests to an SMS channel: inbound texts at the inbound URL,
// delivery reports at .../status. The body must be the carrier's form, and its signature
// (X-Twilio-Signature) must verify over exactly the URL it was sent to before anything else is
// read. A text is stored, queued for its reply job (inbox.go), in one statement and the
// carrier is answered at once: the reply goes out from the job, so a slow model never makes
// the carrier retry.
func (p smsProvider) Hook(ctx context.Context, c store.Channel, _ *Config, req Request) (Answer, error) {
	s := p.s
	if req.Sub != "" && req.Sub != "status" {
		return Answer{}, apierr.NotFound("", "not_found", "An SMS channel's inbound URL has no %q route: the carrier calls the inbound URL and its /status.", req.Sub)
	}
	if req.Method != http.MethodPost {
		return Answer{}, &apierr.Error{Kind: apierr.KindMethodNotAllowed, Code: "method_not_allowed", Message: "The carrier's webhooks are POST requests."}
	}
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return Answer{}, apierr.Invalid("", "invalid_webhook", "The webhook body must be application/x-www-form-urlencoded, as the carrier sends it.")
	}
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		return Answer{}, apierr.Invalid("", "invalid_webhook", "The webhook body could not be read as a form.")
	}
	status := req.Sub == "status"
	signature := req.Header.Get("X-Twilio-Signature")
	if !s.carrier.ValidSignature(req.URL, form, signature) {
		s.log.WarnContext(ctx, "refused an inbound webhook: bad signature", slog.String("channel", c.ID.String()),
			slog.Bool("signed", signature != ""), slog.Bool("status_callback", status))
		return Answer{}, ErrSignature
	}
	ok := Answer{ContentType: sms.TwiMLContentType, Body: sms.EmptyResponse()}
	if status {
		return ok, s.deliveryReport(ctx, c, form)
	}
	return ok, s.receiveSMS(ctx, c, form)
}

// smsProvider carries SMS on this server's carrier account.
type smsProvider struct{ s *Service }

// receiveSMS stores an inbound text once (a retried MessageSid is a no-op), queued for its
// reply job, in one statement.
func (s *Service) receiveSMS(ctx context.Context, c store.Channel, form url.Values) error {
	in, err := sms.InboundFrom(form)
	if err != nil {
		return apierr.Invalid("", "invalid_webhook", "%s", err.Error())
	}
	remote := in.From
	if n, err := sms.NormalizeE164(in.From, ""); err == nil {
		remote = n
	}
	local := in.To
	if c.Address != nil {
		local = *c.Address
	}
	body := in.Body
	if in.NumMedia > 0 && strings.TrimSpace(body) == "" {
		body = "[media message]"
	}
	id, fresh, err := s.hooks.RecordInboundQueued(ctx, c.WorkspaceID, store.InboundMessage{ChannelID: c.ID, ProviderMessageID: in.MessageSID,
		Remote: remote, Local: local, Body: body, Segments: sms.Segments(body)})
	if err == nil && fresh {
		s.queued(id) // its job is inserted from the inbox (inbox.go)
	}
	return err
}

// deliveryReport applies a status callback to the message it reports on, and to its
// campaign's counters when it was a campaign's.
func (s *Service) deliveryReport(ctx context.Context, c store.Channel, form url.Values) error {
	u, err := sms.StatusFrom(form)
	if err != nil {
		return apierr.Invalid("", "invalid_webhook", "%s", err.Error())
	}
	var reason *string
	if u.ErrorCode != "" {
		r := "carrier error " + u.ErrorCode
		reason = &r
	}
	st, known := deliveryStatuses[u.Status]
	if !known {
		return nil // accepted, scheduled, sending, read...: nothing to record
	}
	return s.reportDelivery(ctx, store.Delivery{WorkspaceID: c.WorkspaceID, ChannelID: c.ID, ProviderID: u.MessageSID, Status: st, Reason: reason})
}

// deliveryStatuses maps the carrier's message statuses to those a sent message records.
var deliveryStatuses = map[string]string{"queued": "queued", "sent": "sent", "delivered": "delivered",
	"undelivered": "undelivered", "failed": "failed", "canceled": "failed"}

// Reply is an agent's answer as a text: plain, cut to what the carrier takes.
func (smsProvider) Reply(markdown string) string { return sms.Reply(markdown) }

// Units counts a text's segments.
func (smsProvider) Units(body string) int { return sms.Segments(body) }

// Send hands a text to the carrier, with the channel's status callback.
func (p smsProvider) Send(ctx context.Context, c store.Channel, _ *Config, m store.ChannelMessage) (string, error) {
	return p.s.carrier.SendMessage(ctx, sms.Outbound{From: m.Local, To: m.Remote, Body: m.Body, StatusCallback: p.s.statusURL(c)})
}

// FindSent asks the carrier whether it created m (same numbers, same text) since since.
func (p smsProvider) FindSent(ctx context.Context, _ store.Channel, _ *Config, m store.ChannelMessage, since time.Time) (string, bool, error) {
	return p.s.carrier.FindSent(ctx, m.Local, m.Remote, m.Body, since)
}

// Charge meters one SMS by its segments at the price of the remote party's country (the
// price rule of campaigns), with its spend.recorded {category: "sms", direction, segments}.
func (p smsProvider) Charge(ctx context.Context, tx *store.Tx, c store.Channel, m Metered) error {
	credits, segments := phonenumbers.SMSCredits(m.Remote, m.Body)
	cost := int64(credits) * phonenumbers.NanoUSDPerCredit
	return p.s.Settle(ctx, tx, c, cost, "sms", m.ConversationID, map[string]any{"direction": m.Direction, "segments": segments, "credits": credits})
}
