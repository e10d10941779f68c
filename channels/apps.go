package channels

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"

	"switchboard/store"
)

// AppMessage is one message a messaging app delivered to a channel's webhook.
type AppMessage struct {
	ID   string // the app's message id: a retried webhook carries the same one
	From store.AppUser
	// Kind is "text", or what the app calls the message otherwise (image, audio, sticker,
	// location, reaction...); Text is the text, or a placeholder for the transcript.
	Kind string
	Text string
}

// ReceiveApp stores a messaging app's inbound messages, each once (a retried message id is a
// no-op), with their contacts (found or created by the app's user id, named as the app names
// them) and their reply jobs, in one transaction: the app is answered at once and the replies
// go out from the jobs, so a slow model never makes the app retry.
//
// The messages are stored by sender (the app's user id), each sender's in the order the app
// sent them: a sender's contact and thread rows stay locked until the transaction ends, and
// two webhooks carrying messages of the same people in two orders (two replicas) would
// otherwise each hold one person the other waits for.
func (s *Service) ReceiveApp(ctx context.Context, c store.Channel, msgs []AppMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	msgs = slices.Clone(msgs)
	slices.SortStableFunc(msgs, func(a, b AppMessage) int { return strings.Compare(a.From.ID, b.From.ID) })
	local := ""
	if c.Address != nil {
		local = *c.Address
	}
	return s.hooks.InTx(ctx, func(tx *store.Tx) error {
		for _, m := range msgs {
			if _, err := tx.ContactForAppUser(ctx, c.WorkspaceID, m.From); err != nil {
				return err
			}
			id, fresh, err := tx.RecordAppInbound(ctx, c.WorkspaceID, store.AppInbound{ChannelID: c.ID, ProviderMessageID: m.ID,
				Remote: m.From.ID, Local: local, Body: m.Text, Kind: m.Kind})
			if err != nil {
				return err
			}
			if !fresh {
				continue
			}
			if err := tx.ClearNeedsTemplate(ctx, c.ID, m.From.ID); err != nil {
				return err
			}
			if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), ReplyArgs{WorkspaceID: c.WorkspaceID, MessageID: id}, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReportDelivery applies an app's delivery status (sent, delivered, failed...) to the
// channel's outbound message it names.
func (s *Service) ReportDelivery(ctx context.Context, c store.Channel, messageID, status string, reason *string) error {
	return s.reportDelivery(ctx, store.Delivery{WorkspaceID: c.WorkspaceID, ChannelID: c.ID, ProviderID: messageID, Status: status, Reason: reason})
}

// PublicURL is PUBLIC_BASE_URL, without a trailing slash.
func (s *Service) PublicURL() string { return s.publicURL }

// Log is the channel layer's logger.
func (s *Service) Log() *slog.Logger { return s.log }

// textOnly is the one reply to a message that is not text, per agent language (its primary
// subtag); other languages get English.
var textOnly = map[string]string{
	"en": "Sorry, I can only read text messages. Please write your message as text.",
	"de": "Entschuldigung, ich kann nur Textnachrichten lesen. Bitte schreiben Sie Ihre Nachricht als Text.",
	"fr": "Désolé, je ne peux lire que les messages texte. Merci d'écrire votre message en texte.",
	"es": "Lo siento, solo puedo leer mensajes de texto. Por favor, escriba su mensaje como texto.",
	"pt": "Desculpe, só consigo ler mensagens de texto. Por favor, escreva sua mensagem como texto.",
	"it": "Mi dispiace, posso leggere solo messaggi di testo. Per favore, scrivi il tuo messaggio come testo.",
	"nl": "Sorry, ik kan alleen tekstberichten lezen. Schrijf uw bericht alstublieft als tekst.",
}

// TextOnlyReply is the polite answer, in the agent's language (a BCP 47 tag), to an image,
// a voice note, a sticker or anything else that is not text.
func TextOnlyReply(language string) string {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(language)), "-")
	if t, ok := textOnly[primary]; ok {
		return t
	}
	return textOnly["en"]
}

// agentLanguage is the language of an agent's stored blueprint ("" when it cannot be read).
func agentLanguage(blueprint []byte) string {
	var bp struct {
		Agent struct {
			Language string `json:"language"`
		} `json:"agent"`
	}
	_ = json.Unmarshal(blueprint, &bp)
	return bp.Agent.Language
}

// WindowClosed says whether the channel's app would refuse a free-form message to remote now:
// the app has a customer-service window and remote has not written within it. A campaign
// on the app sends its approved template instead.
func (s *Service) WindowClosed(ctx context.Context, c store.Channel, remote string) (bool, error) {
	snd, ok := s.sender(c.Provider)
	if !ok {
		return false, nil
	}
	return s.windowClosed(ctx, c, snd, remote)
}
