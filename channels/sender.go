package channels

import (
	"context"
	"encoding/json"
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
// settles, so it comes last in its transaction.
func (s *Service) Settle(ctx context.Context, tx *store.Tx, c store.Channel, cost int64, category string, convID *uuid.UUID, data map[string]any) error {
	var short string
	if convID != nil {
		conv, err := tx.ConversationByRef(ctx, c.WorkspaceID, convID.String())
		if err != nil {
			return err
		}
		short = conv.ShortID
	}
	charge := &store.Charge{AmountNanoUSD: cost, Category: category, ConversationID: convID}
	_, _, err := tx.Settle(ctx, c.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		data["amount_usd"], data["category"] = json.Number(money.FormatUSD(cost)), category
		data["balance_usd"], data["channel_id"] = json.Number(money.FormatUSD(balance)), c.ID.String()
		if short != "" {
			data["conversation_id"] = short
		}
		return []store.NewEvent{{Type: "spend.recorded", Data: data}}
	})
	return err
}
