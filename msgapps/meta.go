package msgapps

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Meta's apps (WhatsApp, Messenger, Instagram) share one webhook scheme and the Graph API.

// MetaWindow is the customer-service window of Meta's apps: a business may send free-form
// messages to a person for 24 hours after that person's last message; after it, WhatsApp
// takes only approved templates, and Messenger and Instagram refuse standard messages.
const MetaWindow = 24 * time.Hour

// SignatureHeader is the header Meta signs webhook POSTs with.
const SignatureHeader = "X-Hub-Signature-256"

// ValidMetaSignature reports whether header (X-Hub-Signature-256: "sha256=<hex>") is the
// HMAC-SHA256 of the raw body with the app secret. It compares in constant time.
func ValidMetaSignature(appSecret string, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || appSecret == "" {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// SignMeta is the X-Hub-Signature-256 value Meta sends with body.
func SignMeta(appSecret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// VerifyHandshake answers Meta's subscription check (a GET with hub.mode=subscribe,
// hub.verify_token and hub.challenge): the challenge when the token is the channel's, else
// ok is false.
func VerifyHandshake(q url.Values, verifyToken string) (challenge string, ok bool) {
	if q.Get("hub.mode") != "subscribe" || verifyToken == "" {
		return "", false
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(verifyToken)) != 1 {
		return "", false
	}
	return q.Get("hub.challenge"), true
}

// graphError is the Graph API's error answer.
type graphError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

func graphErrorText(raw []byte) string {
	var e graphError
	if json.Unmarshal(raw, &e) != nil || e.Error.Message == "" {
		return ""
	}
	return e.Error.Message
}

// graphPost posts a JSON body to a Graph API path with the access token (as a bearer token).
func (c Config) graphPost(ctx context.Context, path, token string, body, out any) error {
	h := http.Header{"Authorization": {"Bearer " + token}}
	return postJSON(ctx, c.client(), c.graphURL()+"/"+strings.TrimPrefix(path, "/"), h, body, out, graphErrorText)
}

// MessagingEvent is one entry.messaging[] item of a Messenger or Instagram webhook.
type MessagingEvent struct {
	Sender    struct{ ID string } `json:"sender"`
	Recipient struct{ ID string } `json:"recipient"`
	Timestamp int64               `json:"timestamp"`
	Message   *struct {
		MID         string `json:"mid"`
		Text        string `json:"text"`
		IsEcho      bool   `json:"is_echo"`
		Attachments []struct {
			Type string `json:"type"`
		} `json:"attachments"`
	} `json:"message"`
	Reaction *struct {
		MID      string `json:"mid"`
		Action   string `json:"action"`
		Reaction string `json:"reaction"`
		Emoji    string `json:"emoji"`
	} `json:"reaction"`
}

// MessagingWebhook is a Messenger ("page") or Instagram ("instagram") webhook body.
type MessagingWebhook struct {
	Object string `json:"object"`
	Entry  []struct {
		ID        string           `json:"id"`
		Time      int64            `json:"time"`
		Messaging []MessagingEvent `json:"messaging"`
	} `json:"entry"`
}

// Inbound is a person's message as an app delivered it.
type Inbound struct {
	ID     string // the app's message id
	From   string // the app's id of the person
	Name   string // their name, when the app gives it
	Phone  string // E.164, when the id is a phone number (WhatsApp)
	Kind   string // "text", or the app's kind (image, audio, sticker, location, reaction...)
	Text   string // the text, or a placeholder such as "[image]"
	Status string // for a delivery status instead of a message: sent, delivered, read, failed
	Reason string // why a status is failed
}

// Placeholder is what the transcript shows for a message that is not text.
func Placeholder(kind string) string { return "[" + kind + "]" }

// messagingInbound reads the messages of a Messenger or Instagram webhook addressed to
// account (the page or Instagram account of the channel): texts, attachments and reactions.
// Echoes of the business's own messages are skipped.
func messagingInbound(w MessagingWebhook, account string) []Inbound {
	var out []Inbound
	for _, e := range w.Entry {
		if account != "" && e.ID != account {
			continue
		}
		for _, m := range e.Messaging {
			switch {
			case m.Message != nil && !m.Message.IsEcho && m.Message.MID != "":
				in := Inbound{ID: m.Message.MID, From: m.Sender.ID, Kind: "text", Text: m.Message.Text}
				if strings.TrimSpace(m.Message.Text) == "" {
					kind := "attachment"
					if len(m.Message.Attachments) > 0 && m.Message.Attachments[0].Type != "" {
						kind = m.Message.Attachments[0].Type
					}
					in.Kind, in.Text = kind, Placeholder(kind)
				}
				out = append(out, in)
			case m.Reaction != nil && m.Reaction.Action != "unreact" && m.Reaction.MID != "":
				out = append(out, Inbound{ID: m.Reaction.MID + ":reaction:" + m.Sender.ID, From: m.Sender.ID, Kind: "reaction",
					Text: Placeholder("reaction " + or(m.Reaction.Emoji, m.Reaction.Reaction))})
			}
		}
	}
	return out
}

// sendAnswer is the Send API's answer (Messenger, Instagram).
type sendAnswer struct {
	RecipientID string `json:"recipient_id"`
	MessageID   string `json:"message_id"`
}
