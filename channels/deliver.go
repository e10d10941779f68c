package channels

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/inbox"
	"switchboard/store"
)

// ChannelDeliverer delivers a person's reply (the team inbox) to the remote party of a
// conversation a channel carries (SMS, the messaging apps): a pending outbound message and
// its send job, written in the reply's transaction, so a stored reply is always sent, once.
type ChannelDeliverer struct{ s *Service }

// Deliverer is the inbox.Deliverer of the channels this layer sends on.
func (s *Service) Deliverer() ChannelDeliverer { return ChannelDeliverer{s: s} }

// Deliver queues the reply on the conversation's channel, to its remote party. A person who
// opted out, or (on an app with a customer-service window) has not written within it, is a
// 409 and nothing is written.
func (d ChannelDeliverer) Deliver(ctx context.Context, tx *store.Tx, m inbox.Delivery) error {
	ws := m.WorkspaceID
	channelID, remote, err := tx.ThreadOf(ctx, ws, m.ConversationID)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.Conflict("channel_cannot_deliver", "The conversation %s is not tied to a channel's remote party, so a reply has nowhere to go.", m.ShortID)
	}
	if err != nil {
		return err
	}
	c, err := tx.ChannelByID(ctx, ws, channelID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (c.Status != store.ChannelConnected || c.Address == nil)) {
		return apierr.Conflict("channel_not_connected", "The %s channel of the conversation %s is deleted or not connected, so the reply cannot be sent.", m.Channel, m.ShortID)
	}
	if err != nil {
		return err
	}
	snd, ok := d.s.sender(c.Provider)
	if !ok {
		return apierr.Conflict("channel_cannot_deliver", "A person's reply cannot be delivered on the %s channel yet.", c.Provider)
	}
	out, err := tx.OptedOut(ctx, ws, *c.Address, remote)
	if err != nil {
		return err
	}
	if out {
		return apierr.Conflict("recipient_opted_out", "%s sent STOP to %s: they may not be messaged until they send START.", remote, *c.Address)
	}
	if closed, err := d.s.windowClosed(ctx, c, snd, remote); err != nil || closed {
		if err != nil {
			return err
		}
		return apierr.Conflict(ReasonNeedsTemplate, "%s has not written on this %s channel within its customer-service window, so the app refuses a free-form reply: only an approved template reaches them until they write again.", remote, c.Provider)
	}
	text := snd.Reply(m.Text)
	id, _, err := tx.ClaimOutbound(ctx, ws, store.OutboundMessage{ChannelID: c.ID, Remote: remote, Local: *c.Address,
		Body: text, Segments: snd.Units(text), ConversationID: &m.ConversationID})
	if err != nil {
		return err
	}
	_, err = d.s.jobs.InsertTx(ctx, tx.Pgx(), SendArgs{WorkspaceID: ws, MessageID: id}, nil)
	return err
}

// SendArgs is the job that hands one pending outbound message to the carrier.
type SendArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	MessageID   uuid.UUID `json:"message_id"`
}

// Kind names the job.
func (SendArgs) Kind() string { return "channel_send" }

// InsertOpts puts the job on the channels queue.
func (SendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: replyAttempts}
}

// SendWorker works SendArgs.
type SendWorker struct {
	river.WorkerDefaults[SendArgs]
	s *Service
}

// NewSendWorker is the send job's worker.
func NewSendWorker(s *Service) *SendWorker { return &SendWorker{s: s} }

// Timeout bounds one carrier call.
func (w *SendWorker) Timeout(*river.Job[SendArgs]) time.Duration { return time.Minute }

// Work sends the message, unless a previous attempt handed it to the carrier already.
func (w *SendWorker) Work(ctx context.Context, job *river.Job[SendArgs]) error {
	m, err := w.s.store.ChannelMessageByID(ctx, job.Args.WorkspaceID, job.Args.MessageID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && m.ChannelID == nil) {
		return nil // its channel was deleted with its messages
	}
	if err != nil {
		return err
	}
	c, err := w.s.store.ChannelByID(ctx, m.WorkspaceID, *m.ChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return w.s.send(ctx, c, m)
}
