package channels

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/money"
	"switchboard/store"
)

// A Sender is a Provider whose channel answers through the reply job: the job decides the
// answer the same way on every channel (keywords, the agent, who may be answered) and asks
// the channel's Sender how to write it, send it and meter it.
type Sender interface {
	// Reply is an agent's Markdown answer as the channel writes it (its formatting, its
	// length limits); "" when nothing is left to send.
	Reply(markdown string) string
	// Units is what a body counts for the channel: SMS segments, an app's message parts.
	Units(body string) int
	// Send hands one outbound message to the carrier or app and returns its id there.
	Send(ctx context.Context, c store.Channel, cfg *Config, m store.ChannelMessage) (string, error)
	// Charge meters one message that crossed the channel (direction "inbound" or
	// "outbound") with its spend.recorded. It settles, so it comes last in its transaction.
	Charge(ctx context.Context, tx *store.Tx, c store.Channel, m Metered) error
}

// Metered is one message a Sender charges for.
type Metered struct {
	Remote, Body   string
	Direction      string
	ConversationID *uuid.UUID
}

// A Windowed Sender's app refuses free-form messages to a person who has not written within
// Window (a customer-service window): such a reply is not sent, and its conversation is
// marked as needing a template.
type Windowed interface {
	Window() time.Duration
}

// sender is the Sender of a channel type, if its provider is one.
func (s *Service) sender(t string) (Sender, bool) {
	p, ok := s.providers[t]
	if !ok {
		return nil, false
	}
	snd, ok := p.(Sender)
	return snd, ok
}

// Settle charges a channel's message: cost in nano-USD under category, its spend.recorded
// carrying data with the amount, the balance, the channel and the conversation added. It
// settles, so it comes last in its transaction; in a context from foldCharges it does not
// settle but adds the settlement to the fold, for the caller to settle with its
// transaction's others in one statement (the reply job's inbound charge, with the turn's).
func (s *Service) Settle(ctx context.Context, tx *store.Tx, c store.Channel, cost int64, category string, convID *uuid.UUID, data map[string]any) error {
	f, _ := ctx.Value(foldKey{}).(*fold)
	if convID != nil {
		short := ""
		if f != nil && f.conversationID == *convID {
			short = f.shortID // known: no need to read it
		} else {
			conv, err := tx.ConversationByRef(ctx, c.WorkspaceID, convID.String())
			if err != nil {
				return err
			}
			short = conv.ShortID
		}
		data["conversation_id"] = short
	}
	data["amount_usd"], data["category"], data["channel_id"] = json.Number(money.FormatUSD(cost)), category, c.ID.String()
	// The balance after the charge is known only once the database holds the workspace's
	// lock: it writes it in where the zero is (store.AfterCharge).
	data["balance_usd"] = json.Number("0")
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	const member = `"balance_usd":`
	head, tail, _ := strings.Cut(string(b), member+"0")
	st := store.Settlement{Charge: &store.Charge{AmountNanoUSD: cost, Category: category, ConversationID: convID},
		Events: []store.NewEvent{{Type: "spend.recorded", Data: store.AfterCharge{Head: head + member, Tail: tail}}}}
	if f != nil {
		f.items = append(f.items, st)
		return nil
	}
	return tx.SettleMany(ctx, c.WorkspaceID, []store.Settlement{st})
}

// fold collects the settlements of charges made in a context from foldCharges.
type fold struct {
	items          []store.Settlement
	conversationID uuid.UUID // a conversation whose short id is known
	shortID        string
}

type foldKey struct{}

// foldCharges is ctx with charges collected instead of settled (Settle); the conversation
// given is the one they name, whose short id need not be read.
func foldCharges(ctx context.Context, conversationID uuid.UUID, shortID string) (context.Context, *fold) {
	f := &fold{conversationID: conversationID, shortID: shortID}
	return context.WithValue(ctx, foldKey{}, f), f
}
