package msgapps

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Telegram (msgapp_4): the Telegram Bot API.

// TelegramLimit is the longest text sendMessage takes, in characters (after entities parsing).
const TelegramLimit = 4096

// TelegramSecretHeader carries the secret_token given to setWebhook on every update.
const TelegramSecretHeader = "X-Telegram-Bot-Api-Secret-Token" //nolint:gosec // a header name, not a credential

// TelegramSecret is the webhook's secret token for a bot on a channel: derived from the bot
// token and the channel's inbound token (HMAC-SHA256), so nothing more is stored, a new bot
// token brings a new secret, and setWebhook and the check on each update agree.
func TelegramSecret(botToken, inboundToken string) string {
	mac := hmac.New(sha256.New, []byte(botToken))
	mac.Write([]byte("switchboard telegram webhook " + inboundToken))
	return hex.EncodeToString(mac.Sum(nil))
}

// ValidTelegramSecret reports whether the update's header is the webhook's secret token.
func ValidTelegramSecret(header, secret string) bool {
	return header != "" && subtle.ConstantTimeCompare([]byte(header), []byte(secret)) == 1
}

// BotID is the bot's numeric id, the part of its token before the colon ("" when the token
// is not a bot token).
func BotID(token string) string {
	id, rest, found := strings.Cut(token, ":")
	if !found || rest == "" || !digits.MatchString(id) {
		return ""
	}
	return id
}

// TelegramUpdate is an update the Bot API posts to the webhook (the fields read here).
type TelegramUpdate struct {
	UpdateID int64            `json:"update_id"`
	Message  *TelegramMessage `json:"message"`
}

// TelegramMessage is a message in an update.
type TelegramMessage struct {
	MessageID int64 `json:"message_id"`
	From      *struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		LastName  string `json:"last_name"`
		Username  string `json:"username"`
	} `json:"from"`
	Chat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	} `json:"chat"`
	Date int64  `json:"date"`
	Text string `json:"text"`
	// Present (non-null) for the other kinds of message.
	Photo     json.RawMessage `json:"photo"`
	Sticker   json.RawMessage `json:"sticker"`
	Voice     json.RawMessage `json:"voice"`
	Audio     json.RawMessage `json:"audio"`
	Video     json.RawMessage `json:"video"`
	VideoNote json.RawMessage `json:"video_note"`
	Document  json.RawMessage `json:"document"`
	Location  json.RawMessage `json:"location"`
	Contact   json.RawMessage `json:"contact"`
	Animation json.RawMessage `json:"animation"`
	Poll      json.RawMessage `json:"poll"`
}

// kind is what a message is: "text", or the first kind of content it carries.
func (m *TelegramMessage) kind() string {
	if strings.TrimSpace(m.Text) != "" {
		return "text"
	}
	for _, k := range []struct {
		name string
		raw  json.RawMessage
	}{{"photo", m.Photo}, {"sticker", m.Sticker}, {"voice", m.Voice}, {"audio", m.Audio}, {"video", m.Video},
		{"video_note", m.VideoNote}, {"document", m.Document}, {"location", m.Location}, {"contact", m.Contact},
		{"animation", m.Animation}, {"poll", m.Poll}} {
		if len(k.raw) > 0 && string(k.raw) != "null" {
			return k.name
		}
	}
	return "unknown"
}

// TelegramInbound reads an update: a private chat's message (others, and updates that are
// no new message, are nothing to answer). The person is the chat (its id is where replies
// go); the message id is the chat's and the message's (a retried update has the same).
func TelegramInbound(raw []byte) ([]Inbound, error) {
	var u TelegramUpdate
	if err := json.Unmarshal(raw, &u); err != nil {
		return nil, fmt.Errorf("the update is not Telegram's JSON: %w", err)
	}
	m := u.Message
	if m == nil || m.Chat.Type != "private" || (m.From != nil && m.From.IsBot) {
		return nil, nil
	}
	chat := strconv.FormatInt(m.Chat.ID, 10)
	in := Inbound{ID: chat + ":" + strconv.FormatInt(m.MessageID, 10), From: chat, Kind: m.kind(), Text: m.Text}
	if m.From != nil {
		in.Name = strings.TrimSpace(m.From.FirstName + " " + m.From.LastName)
	}
	if in.Kind != "text" {
		in.Text = Placeholder(in.Kind)
	}
	return []Inbound{in}, nil
}

// telegramAnswer is the Bot API's envelope.
type telegramAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	Description string          `json:"description"`
}

func telegramErrorText(raw []byte) string {
	var a telegramAnswer
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	return a.Description
}

// telegramCall calls a Bot API method with a JSON body and decodes its result.
func (c Config) telegramCall(ctx context.Context, token, method string, body, result any) error {
	var a telegramAnswer
	u := c.telegramURL() + "/bot" + url.PathEscape(token) + "/" + method
	if err := postJSON(ctx, c.client(), u, nil, body, &a, telegramErrorText); err != nil {
		return err
	}
	if !a.OK {
		return fmt.Errorf("telegram %s: %s", method, a.Description)
	}
	if result == nil {
		return nil
	}
	return json.Unmarshal(a.Result, result)
}

// SetWebhook is the body of setWebhook: where updates go, with the secret token Telegram
// sends back in X-Telegram-Bot-Api-Secret-Token, for messages only.
type SetWebhook struct {
	URL            string   `json:"url"`
	SecretToken    string   `json:"secret_token"`
	AllowedUpdates []string `json:"allowed_updates"`
}

// SetTelegramWebhook points the bot's updates at url, signed with secret.
func (c Config) SetTelegramWebhook(ctx context.Context, token, url, secret string) error {
	return c.telegramCall(ctx, token, "setWebhook", SetWebhook{URL: url, SecretToken: secret, AllowedUpdates: []string{"message"}}, nil)
}

// TelegramBot is getMe's answer.
type TelegramBot struct {
	ID       int64  `json:"id"`
	IsBot    bool   `json:"is_bot"`
	Username string `json:"username"`
}

// GetMe checks a bot token: the bot it belongs to.
func (c Config) GetMe(ctx context.Context, token string) (TelegramBot, error) {
	var b TelegramBot
	return b, c.telegramCall(ctx, token, "getMe", struct{}{}, &b)
}

// SendTelegramMessage is sendMessage's body.
type SendTelegramMessage struct {
	ChatID    int64  `json:"chat_id"`
	Text      string `json:"text"`
	ParseMode string `json:"parse_mode,omitempty"`
}

// SendTelegram sends a text (HTML, at most TelegramLimit characters) to a chat. It returns
// the chat and message id, as TelegramInbound names messages.
func (c Config) SendTelegram(ctx context.Context, token, chat, text string) (string, error) {
	id, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		return "", fmt.Errorf("the chat id %q is not a number", chat)
	}
	msg := SendTelegramMessage{ChatID: id, Text: text, ParseMode: "HTML"}
	if !balancedHTML(text) {
		msg.Text, msg.ParseMode = htmlToPlain(text), ""
	}
	var sent struct {
		MessageID int64 `json:"message_id"`
	}
	if err := c.telegramCall(ctx, token, "sendMessage", msg, &sent); err != nil {
		return "", err
	}
	return chat + ":" + strconv.FormatInt(sent.MessageID, 10), nil
}

// balancedHTML says whether each tag Format writes is closed in the same part (a reply split
// inside a bold span is not, and Telegram refuses the part; it goes out as plain text).
func balancedHTML(s string) bool {
	for _, t := range []string{"b", "i", "s"} {
		if strings.Count(s, "<"+t+">") != strings.Count(s, "</"+t+">") {
			return false
		}
	}
	return true
}

var htmlPlain = strings.NewReplacer("<b>", "", "</b>", "", "<i>", "", "</i>", "", "<s>", "", "</s>", "", "&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&")

// htmlToPlain is Format's HTML as plain text.
func htmlToPlain(s string) string { return htmlPlain.Replace(s) }
