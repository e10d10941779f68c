package msgapps

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/channels"
	"switchboard/store"
)

// Register makes the channel layer carry the four apps' traffic.
func Register(s *channels.Service, cfg Config) {
	for t, a := range map[blueprint.ChannelType]metaApp{
		blueprint.ChannelMsgApp1: whatsApp{}, blueprint.ChannelMsgApp2: messenger{}, blueprint.ChannelMsgApp3: instagram{},
	} {
		s.Register(t, &metaProvider{base: base{t: t, s: s, cfg: cfg}, app: a})
	}
	s.Register(blueprint.ChannelMsgApp4, &telegramProvider{base: base{t: blueprint.ChannelMsgApp4, s: s, cfg: cfg}})
}

// base is what every app's provider shares: its channel type, the channel layer and where
// the apps are reached.
type base struct {
	t   blueprint.ChannelType
	s   *channels.Service
	cfg Config
}

// checkKeys refuses a config key the app does not take, and requires the credentials.
func (b base) checkKeys(cfg *channels.Config, plain, secrets []string) error {
	known := strings.Join(append(append([]string{}, plain...), secrets...), ", ")
	for k := range cfg.Plain {
		if !contains(plain, k) {
			if contains(secrets, k) {
				return apierr.Invalid("config."+k, "invalid_value", "config.%s is a credential: give it as a non-empty string.", k)
			}
			return apierr.Invalid("config."+k, "unknown_parameter", "A %s channel has no setting %q: its settings are %s.", b.t, k, known)
		}
	}
	for k := range cfg.Secrets {
		if !contains(secrets, k) {
			return apierr.Invalid("config."+k, "unknown_parameter", "A %s channel has no setting %q: its settings are %s.", b.t, k, known)
		}
	}
	for _, k := range secrets {
		if cfg.Secrets[k] == "" {
			return apierr.Invalid("config."+k, "missing_parameter", "config.%s is required for a %s channel (its settings are %s).", k, b.t, known)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Charge meters one message (each part of a long reply) at the app's price, with its
// spend.recorded {category: "message", app, direction, parts}.
func (b base) charge(ctx context.Context, tx *store.Tx, c store.Channel, m channels.Metered, parts int) error {
	cost := catalog.MessagePriceNanoUSD(string(b.t)) * int64(parts)
	return b.s.Settle(ctx, tx, c, cost, "message", m.ConversationID, map[string]any{"app": string(b.t), "direction": m.Direction, "parts": parts})
}

// receive hands an app's messages to the channel layer, and its delivery statuses to their
// messages.
func (b base) receive(ctx context.Context, c store.Channel, ins []Inbound) error {
	var msgs []channels.AppMessage
	for _, in := range ins {
		if in.Status != "" {
			st, known := deliveryStatuses[in.Status]
			if !known {
				continue
			}
			var reason *string
			if in.Reason != "" {
				reason = &in.Reason
			}
			if err := b.s.ReportDelivery(ctx, c, in.ID, st, reason); err != nil {
				return err
			}
			continue
		}
		if in.ID == "" || in.From == "" {
			continue
		}
		msgs = append(msgs, channels.AppMessage{ID: in.ID, Kind: in.Kind, Text: in.Text,
			From: store.AppUser{App: string(b.t), ID: in.From, Name: in.Name, Phone: in.Phone}})
	}
	return b.s.ReceiveApp(ctx, c, msgs)
}

// deliveryStatuses maps the apps' statuses to those a sent message records (read is
// delivered, and more).
var deliveryStatuses = map[string]string{"sent": "sent", "delivered": "delivered", "read": "delivered", "failed": "failed"}

// sendParts sends a reply part by part (the app's length limit) and returns the first
// part's id; a part the app refuses stops the rest.
func sendParts(ctx context.Context, body string, limit int, send func(context.Context, string) (string, error)) (string, error) {
	var first string
	parts := Split(body, limit)
	for i, p := range parts {
		id, err := send(ctx, p)
		if err != nil {
			if i > 0 {
				return first, fmt.Errorf("%d of %d parts were sent: %w", i, len(parts), err)
			}
			return "", err
		}
		if first == "" {
			first = id
		}
	}
	return first, nil
}

// ok is the answer to an app's webhook POST.
var ok = channels.Answer{ContentType: "text/plain; charset=utf-8", Body: "ok"}

var digits = regexp.MustCompile(`^[0-9]{1,32}$`)

// metaApp is what WhatsApp, Messenger and Instagram do their own way.
type metaApp interface {
	// account is the config key of the business's id at the app (the phone number, the
	// page, the Instagram account), which is the channel's address.
	account() string
	// inbound reads a signed webhook body for the account.
	inbound(raw []byte, account string) ([]Inbound, error)
	send(ctx context.Context, c Config, account, token, to, text string) (string, error)
	style() Style
	limit() int
}

// metaProvider carries one of Meta's apps: the GET handshake, signed POSTs, the Graph API.
type metaProvider struct {
	base
	app metaApp
}

// metaSecrets are the credentials every Meta channel needs.
var metaSecrets = []string{"access_token", "app_secret", "verify_token"}

// Prepare checks the channel's settings: the account id, and the access token, app secret
// and verify token, all required; the account is the channel's address (one channel each,
// across workspaces). There is nothing to ask Meta: the webhook is subscribed in the app's
// dashboard with the inbound URL and the verify token.
func (p *metaProvider) Prepare(_ context.Context, _ uuid.UUID, w *store.ChannelWrite, cfg *channels.Config) (channels.Status, error) {
	key := p.app.account()
	if err := p.checkKeys(cfg, []string{key}, metaSecrets); err != nil {
		return channels.Status{}, err
	}
	id, present, err := cfg.Str(key)
	if err != nil {
		return channels.Status{}, err
	}
	id = strings.TrimSpace(id)
	if !present || id == "" {
		return channels.Status{}, apierr.Invalid("config."+key, "missing_parameter", "config.%s is required: the id Meta shows for it in the app's dashboard.", key)
	}
	if !digits.MatchString(id) {
		return channels.Status{}, apierr.Invalid("config."+key, "invalid_value", "config.%s must be the numeric id Meta shows in the app's dashboard.", key)
	}
	cfg.Set(key, id)
	w.Address = &id
	return channels.Status{Connected: true}, nil
}

// Connected has nothing to register: Meta calls the URL pasted in its dashboard.
func (p *metaProvider) Connected(context.Context, store.Channel, *channels.Config) {}

// Hook answers Meta: the subscription handshake (GET) from the verify token, and webhook
// POSTs whose X-Hub-Signature-256 verifies over the raw body with the app secret, checked
// before the body is read.
func (p *metaProvider) Hook(ctx context.Context, c store.Channel, cfg *channels.Config, req channels.Request) (channels.Answer, error) {
	if req.Sub != "" {
		return channels.Answer{}, apierr.NotFound("", "not_found", "A %s channel's inbound URL has no %q route.", p.t, req.Sub)
	}
	switch req.Method {
	case http.MethodGet:
		challenge, valid := VerifyHandshake(req.Query, cfg.Secrets["verify_token"])
		if !valid {
			return channels.Answer{}, channels.ErrSignature
		}
		return channels.Answer{ContentType: "text/plain; charset=utf-8", Body: challenge}, nil
	case http.MethodPost:
	default:
		return channels.Answer{}, &apierr.Error{Kind: apierr.KindMethodNotAllowed, Code: "method_not_allowed", Message: "Meta's webhooks are a GET handshake and POSTs."}
	}
	if !ValidMetaSignature(cfg.Secrets["app_secret"], req.Body, req.Header.Get(SignatureHeader)) {
		p.s.Log().WarnContext(ctx, "refused an inbound webhook: bad signature", slog.String("channel", c.ID.String()),
			slog.Bool("signed", req.Header.Get(SignatureHeader) != ""))
		return channels.Answer{}, channels.ErrSignature
	}
	account, _, _ := cfg.Str(p.app.account())
	ins, err := p.app.inbound(req.Body, account)
	if err != nil {
		return channels.Answer{}, apierr.Invalid("", "invalid_webhook", "%s", err.Error())
	}
	return ok, p.receive(ctx, c, ins)
}

// Reply is the answer in the app's formatting; Send splits it at the app's limit.
func (p *metaProvider) Reply(markdown string) string { return Format(markdown, p.app.style()) }

// Units counts the messages a body is sent as.
func (p *metaProvider) Units(body string) int { return max(1, len(Split(body, p.app.limit()))) }

// Send sends a message through the Graph API, part by part.
func (p *metaProvider) Send(ctx context.Context, _ store.Channel, cfg *channels.Config, m store.ChannelMessage) (string, error) {
	account, _, _ := cfg.Str(p.app.account())
	token := cfg.Secrets["access_token"]
	return sendParts(ctx, m.Body, p.app.limit(), func(ctx context.Context, part string) (string, error) {
		return p.app.send(ctx, p.cfg, account, token, m.Remote, part)
	})
}

// Charge meters a message by its parts.
func (p *metaProvider) Charge(ctx context.Context, tx *store.Tx, c store.Channel, m channels.Metered) error {
	return p.charge(ctx, tx, c, m, p.Units(m.Body))
}

// Window is Meta's 24-hour customer-service window.
func (p *metaProvider) Window() time.Duration { return MetaWindow }

// whatsApp is msgapp_1.
type whatsApp struct{}

func (whatsApp) account() string { return "phone_number_id" }
func (whatsApp) inbound(raw []byte, account string) ([]Inbound, error) {
	return WhatsAppInbound(raw, account)
}
func (whatsApp) send(ctx context.Context, c Config, account, token, to, text string) (string, error) {
	return c.SendWhatsApp(ctx, account, token, to, text)
}
func (whatsApp) style() Style { return WhatsAppStyle }
func (whatsApp) limit() int   { return WhatsAppLimit }

// telegramProvider carries a Telegram bot: its webhook is registered by this server, with a
// secret token checked on every update.
type telegramProvider struct{ base }

// Prepare checks the bot token (its bot id is the channel's address: one channel per bot)
// with getMe; a token Telegram refuses, or a Telegram that cannot be reached, leaves the
// channel needing setup.
func (p *telegramProvider) Prepare(ctx context.Context, _ uuid.UUID, w *store.ChannelWrite, cfg *channels.Config) (channels.Status, error) {
	delete(cfg.Plain, "bot_username") // the server's, from getMe: never a user's setting
	if err := p.checkKeys(cfg, nil, []string{"bot_token"}); err != nil {
		return channels.Status{}, err
	}
	id := BotID(cfg.Secrets["bot_token"])
	if id == "" {
		return channels.Status{}, apierr.Invalid("config.bot_token", "invalid_value", "config.bot_token must be the token @BotFather gave, such as 123456789:AAE-example.")
	}
	w.Address = &id
	bot, err := p.cfg.GetMe(ctx, cfg.Secrets["bot_token"])
	if err != nil {
		p.s.Log().WarnContext(ctx, "checking a Telegram bot token", slog.String("error", err.Error()))
		return channels.NeedsSetup("Telegram did not accept the bot token (" + publicWords(err) + "): check it with @BotFather, then PATCH this channel."), nil
	}
	if bot.Username != "" {
		cfg.Set("bot_username", bot.Username)
	}
	return channels.Status{Connected: true}, nil
}

// Connected registers the channel's inbound URL as the bot's webhook (setWebhook), with the
// secret token every update must carry; it runs again on every PATCH. The default
// PUBLIC_BASE_URL (localhost) is never registered: Telegram cannot reach it.
func (p *telegramProvider) Connected(ctx context.Context, c store.Channel, cfg *channels.Config) {
	if u, err := url.Parse(p.s.PublicURL()); err != nil || u.Hostname() == "localhost" {
		return
	}
	token := cfg.Secrets["bot_token"]
	if err := p.cfg.SetTelegramWebhook(ctx, token, p.s.InboundURL(c), TelegramSecret(token, c.InboundToken)); err != nil {
		p.s.Log().WarnContext(ctx, "registering a Telegram bot's webhook", slog.String("channel", c.ID.String()), slog.String("error", err.Error()))
	}
}

// Hook takes the bot's updates: POSTs carrying the secret token, checked before the body is
// read.
func (p *telegramProvider) Hook(ctx context.Context, c store.Channel, cfg *channels.Config, req channels.Request) (channels.Answer, error) {
	if req.Sub != "" {
		return channels.Answer{}, apierr.NotFound("", "not_found", "A %s channel's inbound URL has no %q route.", p.t, req.Sub)
	}
	if req.Method != http.MethodPost {
		return channels.Answer{}, &apierr.Error{Kind: apierr.KindMethodNotAllowed, Code: "method_not_allowed", Message: "Telegram's updates are POST requests."}
	}
	if !ValidTelegramSecret(req.Header.Get(TelegramSecretHeader), TelegramSecret(cfg.Secrets["bot_token"], c.InboundToken)) {
		p.s.Log().WarnContext(ctx, "refused an inbound webhook: bad secret token", slog.String("channel", c.ID.String()))
		return channels.Answer{}, channels.ErrSignature
	}
	ins, err := TelegramInbound(req.Body)
	if err != nil {
		return channels.Answer{}, apierr.Invalid("", "invalid_webhook", "%s", err.Error())
	}
	return ok, p.receive(ctx, c, ins)
}

// Reply is the answer in Telegram's HTML.
func (p *telegramProvider) Reply(markdown string) string { return Format(markdown, TelegramHTML) }

// Units counts the messages a body is sent as.
func (p *telegramProvider) Units(body string) int { return max(1, len(Split(body, TelegramLimit))) }

// Send sends a message with sendMessage, part by part.
func (p *telegramProvider) Send(ctx context.Context, _ store.Channel, cfg *channels.Config, m store.ChannelMessage) (string, error) {
	return sendParts(ctx, m.Body, TelegramLimit, func(ctx context.Context, part string) (string, error) {
		return p.cfg.SendTelegram(ctx, cfg.Secrets["bot_token"], m.Remote, part)
	})
}

// Charge meters a message by its parts.
func (p *telegramProvider) Charge(ctx context.Context, tx *store.Tx, c store.Channel, m channels.Metered) error {
	return p.charge(ctx, tx, c, m, p.Units(m.Body))
}

// publicWords is an error as a user may read it (an app's own words, not internals).
func publicWords(err error) string {
	if e := apierr.As(err); e != nil && e.Kind != apierr.KindInternal {
		return e.Message
	}
	return "it could not be reached"
}
