package inbox

import (
	"context"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// Deliverer sends a person's reply on one channel. Deliver runs inside the transaction that
// stores the reply, so a reply is delivered if and only if it is stored: a channel that sends
// through a provider queues a durable job in tx (the SMS channel: a pending outbound message
// and its send job), and a channel whose client reads the conversation (the webchat widget's
// stream, the API) has nothing to do.
type Deliverer interface {
	Deliver(ctx context.Context, tx *store.Tx, d Delivery) error
}

// Delivery is a person's reply to deliver.
type Delivery struct {
	WorkspaceID    uuid.UUID
	ConversationID uuid.UUID
	ShortID        string
	Channel        string
	Text           string
	AuthorName     string
}

// Stored is the Deliverer of channels whose clients read the conversation themselves: the
// webchat widget (its stream wakes on the reply's announcement) and the API (GET
// /api/conversations/{id}).
type Stored struct{}

// Deliver does nothing more than the store did.
func (Stored) Deliver(context.Context, *store.Tx, Delivery) error { return nil }

// deliverer is the channel's Deliverer; a channel without one cannot carry a person's
// reply yet, and the reply is refused before anything is written.
func (s *Service) deliverer(channel string) (Deliverer, error) {
	if d, ok := s.deliverers[channel]; ok {
		return d, nil
	}
	return nil, apierr.Conflict("channel_cannot_deliver", "A person's reply cannot be delivered on the %s channel yet; reply on the contact's phone or email instead, or close the conversation.", channel)
}
