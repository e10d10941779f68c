package channels

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/sms"
	"switchboard/store"
)

// SMS channel settings.
const (
	maxHelpText = 320 // two segments
	smsKeys     = "phone_number, region, help_text"
)

// prepareSMS checks an SMS channel's settings and decides its status: the number is valid
// (normalized to E.164 with libphonenumber), not another workspace's, and on this server's
// carrier account (bought through /api/phone-numbers, or found there).
func (s *Service) prepareSMS(ctx context.Context, ws uuid.UUID, w *store.ChannelWrite, cfg *config) (status, error) {
	for k := range cfg.plain {
		if k != "phone_number" && k != "region" && k != "help_text" && k != "number_sid" {
			return status{}, apierr.Invalid("config."+k, "unknown_parameter", "An sms channel has no setting %q: its settings are %s.", k, smsKeys)
		}
	}
	if len(cfg.secrets) > 0 {
		return status{}, apierr.Invalid("config", "unknown_parameter", "An sms channel takes no credentials: it uses this server's carrier account (TWILIO_*). Its settings are %s.", smsKeys)
	}
	region, _, err := cfg.str("region")
	if err != nil {
		return status{}, err
	}
	number, ok, err := cfg.str("phone_number")
	if err != nil {
		return status{}, err
	}
	if !ok || strings.TrimSpace(number) == "" {
		return status{}, apierr.Invalid("config.phone_number", "missing_parameter", "config.phone_number is required: the channel's number in E.164, such as +14155550100.")
	}
	e164, err := sms.NormalizeE164(number, strings.ToUpper(region))
	if err != nil {
		return status{}, apierr.Invalid("config.phone_number", "invalid_value", "config.phone_number: %s", err.Error())
	}
	cfg.set("phone_number", e164)
	w.Address = &e164
	if help, ok, err := cfg.str("help_text"); err != nil {
		return status{}, err
	} else if ok && (strings.TrimSpace(help) == "" || utf8.RuneCountInString(help) > maxHelpText) {
		return status{}, apierr.Invalid("config.help_text", "invalid_value", "config.help_text must be 1 to %d characters.", maxHelpText)
	}
	bought, elsewhere, err := s.store.NumberOwner(ctx, ws, e164)
	if err != nil {
		return status{}, err
	}
	if elsewhere {
		return status{}, numberTaken(&e164)
	}
	delete(cfg.plain, "number_sid")
	if !s.carrier.Configured() {
		return needsSetup("This server has no carrier account: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN, restart, then PATCH this channel to check again."), nil
	}
	sid := bought
	if sid == "" {
		n, found, err := s.carrier.FindNumber(ctx, e164)
		if err != nil {
			s.log.WarnContext(ctx, "looking up a number at the carrier", slog.String("number", e164), slog.String("error", err.Error()))
			return needsSetup("The carrier could not be reached to look up " + e164 + ": PATCH this channel to try again."), nil
		}
		if !found {
			return needsSetup("The number " + e164 + " is not on this server's carrier account: buy it through /api/phone-numbers or add it to the account, then PATCH this channel."), nil
		}
		sid = n.SID
	}
	cfg.set("number_sid", sid)
	return status{connected: true}, nil
}

// pointCarrier points a connected SMS channel's number at its inbound URL, so that texts
// reach it without a visit to the carrier's console. It is best effort: a failure is logged
// and the README says where to paste the URL by hand. The default PUBLIC_BASE_URL (localhost)
// is never sent, since it would replace a working webhook with one the carrier cannot reach.
func (s *Service) pointCarrier(ctx context.Context, c store.Channel) {
	if c.Provider != "sms" || c.Status != store.ChannelConnected || !s.carrier.Configured() {
		return
	}
	if u, err := url.Parse(s.publicURL); err != nil || u.Hostname() == "localhost" {
		return
	}
	cfg := &config{plain: map[string]json.RawMessage{}}
	_ = json.Unmarshal(c.Config, &cfg.plain)
	sid, _, _ := cfg.str("number_sid")
	if sid == "" {
		return
	}
	if err := s.carrier.ConfigureSMS(ctx, sid, s.InboundURL(c)); err != nil {
		s.log.WarnContext(ctx, "pointing the number's messaging webhook at the channel", slog.String("channel", c.ID.String()), slog.String("error", err.Error()))
	}
}

// Hook is a request of a provider to /hooks/{provider}/{token}, or to .../status for the
// delivery reports of what the channel sent.
type Hook struct {
	Provider, Token string
	Status          bool
	Form            url.Values
	Signature       string // X-Twilio-Signature
}

// Answer is what the provider gets back.
type Answer struct {
	ContentType string
	Body        string
}

// ErrSignature is the answer to a request whose signature does not verify: 403, nothing
// stored.
var ErrSignature = &apierr.Error{Kind: apierr.KindPermission, Code: "invalid_signature",
	Message: "The request's signature does not verify against this channel's inbound URL."}

// Receive takes an inbound webhook: the signature is checked over exactly the channel's
// inbound URL before anything is read; a message is stored with its reply job in one
// transaction, and the provider is answered at once (the reply goes out from the job, so a
// slow model never makes the carrier retry).
func (s *Service) Receive(ctx context.Context, h Hook) (Answer, error) {
	c, err := s.store.ChannelByToken(ctx, h.Provider, h.Token)
	if errors.Is(err, store.ErrNotFound) {
		return Answer{}, apierr.NotFound("", "channel_not_found", "No channel has this inbound URL.")
	}
	if err != nil {
		return Answer{}, err
	}
	if h.Provider != "sms" {
		return Answer{}, apierr.NotFound("", "channel_not_found", "This server does not carry %s traffic yet.", h.Provider)
	}
	target := s.InboundURL(c)
	if h.Status {
		target = s.statusURL(c)
	}
	if !s.carrier.ValidSignature(target, h.Form, h.Signature) {
		s.log.WarnContext(ctx, "refused an inbound webhook: bad signature", slog.String("channel", c.ID.String()),
			slog.Bool("signed", h.Signature != ""), slog.Bool("status_callback", h.Status))
		return Answer{}, ErrSignature
	}
	if h.Status {
		return Answer{ContentType: sms.TwiMLContentType, Body: sms.EmptyResponse()}, s.deliveryReport(ctx, c, h.Form)
	}
	return Answer{ContentType: sms.TwiMLContentType, Body: sms.EmptyResponse()}, s.receiveSMS(ctx, c, h.Form)
}

// receiveSMS stores an inbound text once (a retried MessageSid is a no-op) with its reply job.
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
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		id, fresh, err := tx.RecordInbound(ctx, c.WorkspaceID, store.InboundMessage{ChannelID: c.ID, ProviderMessageID: in.MessageSID,
			Remote: remote, Local: local, Body: body, Segments: sms.Segments(body)})
		if err != nil || !fresh {
			return err
		}
		_, err = s.jobs.InsertTx(ctx, tx.Pgx(), ReplyArgs{WorkspaceID: c.WorkspaceID, MessageID: id}, nil)
		return err
	})
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
	return s.store.ReportDelivery(ctx, c.WorkspaceID, c.ID, u.MessageSID, st, reason)
}

// deliveryStatuses maps the carrier's message statuses to those a sent message records.
var deliveryStatuses = map[string]string{"queued": "queued", "sent": "sent", "delivered": "delivered",
	"undelivered": "undelivered", "failed": "failed", "canceled": "failed"}
