package store

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// ChannelMessage is a message that crossed a channel, either way.
type ChannelMessage = dbsqlc.ChannelMessage

// InboundMessage is a message a channel received.
type InboundMessage struct {
	ChannelID         uuid.UUID
	ProviderMessageID string
	Remote, Local     string
	Body              string
	Segments          int
}

// RecordInbound stores an inbound message once per carrier id: a retried webhook returns
// false and writes nothing.
func (q *queries) RecordInbound(ctx context.Context, workspaceID uuid.UUID, m InboundMessage) (uuid.UUID, bool, error) {
	id, err := q.sql.InsertInboundMessage(ctx, q.db, dbsqlc.InsertInboundMessageParams{WorkspaceID: workspaceID, ChannelID: &m.ChannelID,
		ProviderMessageID: &m.ProviderMessageID, Remote: m.Remote, Local: m.Local, Body: m.Body, Segments: m.Segments})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// RecordInboundQueued stores an inbound message once per carrier id, with its row in the
// inbox from which its reply job is inserted (TakeInbox), in one statement: durable when it
// returns. A retried webhook returns false and writes nothing.
func (q *queries) RecordInboundQueued(ctx context.Context, workspaceID uuid.UUID, m InboundMessage) (uuid.UUID, bool, error) {
	id, err := q.sql.RecordInboundQueued(ctx, q.db, dbsqlc.RecordInboundQueuedParams{WorkspaceID: workspaceID, ChannelID: &m.ChannelID,
		ProviderMessageID: &m.ProviderMessageID, Remote: m.Remote, Local: m.Local, Body: m.Body, Segments: m.Segments})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// Queued is an inbound message taken from the inbox: its reply job is to be inserted in the
// same transaction.
type Queued struct{ WorkspaceID, MessageID uuid.UUID }

// TakeInbox takes these messages' inbox rows, and returns those it found: a row another
// replica's sweep took first is not returned. Call it in the transaction that inserts their
// jobs.
func (q *queries) TakeInbox(ctx context.Context, ids []uuid.UUID) ([]Queued, error) {
	rows, err := q.sql.TakeInbox(ctx, q.db, ids)
	out := make([]Queued, len(rows))
	for i, r := range rows {
		out[i] = Queued{WorkspaceID: r.WorkspaceID, MessageID: r.ID}
	}
	return out, err
}

// TakeStaleInbox takes up to limit inbox rows queued before before (those of a replica that
// died before inserting their jobs), skipping rows another transaction holds.
func (q *queries) TakeStaleInbox(ctx context.Context, before time.Time, limit int) ([]Queued, error) {
	rows, err := q.sql.TakeStaleInbox(ctx, q.db, dbsqlc.TakeStaleInboxParams{Before: before, Lim: limit})
	out := make([]Queued, len(rows))
	for i, r := range rows {
		out[i] = Queued{WorkspaceID: r.WorkspaceID, MessageID: r.ID}
	}
	return out, err
}

// ChannelMessageByID reads a channel message.
func (q *queries) ChannelMessageByID(ctx context.Context, workspaceID, id uuid.UUID) (ChannelMessage, error) {
	m, err := q.sql.ChannelMessageByID(ctx, q.db, dbsqlc.ChannelMessageByIDParams{WorkspaceID: workspaceID, ID: id})
	return m, notFound("channel message", err)
}

// SetChannelMessageState moves an inbound message along (answering, answered, stored), with
// the reason it got no reply and its conversation.
func (q *queries) SetChannelMessageState(ctx context.Context, workspaceID, id uuid.UUID, status string, reason *string, conversationID *uuid.UUID) error {
	return q.sql.SetChannelMessageState(ctx, q.db, dbsqlc.SetChannelMessageStateParams{WorkspaceID: workspaceID, ID: id, Status: status,
		Reason: reason, ConversationID: conversationID})
}

// OutboundMessage is a message about to be sent on a channel.
type OutboundMessage struct {
	ChannelID      uuid.UUID
	Remote, Local  string
	Body           string
	Segments       int
	ConversationID *uuid.UUID
	ReplyTo        *uuid.UUID // the inbound message it answers
	// Claimed records it `sending` instead of `pending`: the caller hands it to the carrier
	// as soon as the transaction commits (as ClaimSend would), and a rerun that finds it
	// `sending` resolves it with the carrier.
	Claimed bool
}

// ClaimOutbound records an outbound message as `pending`: for a reply, in the transaction that
// decides the answer, so that a rerun sends exactly this text. For a reply, false means the
// inbound message already has its reply.
func (q *queries) ClaimOutbound(ctx context.Context, workspaceID uuid.UUID, m OutboundMessage) (uuid.UUID, bool, error) {
	id, err := q.sql.InsertOutboundMessage(ctx, q.db, dbsqlc.InsertOutboundMessageParams{WorkspaceID: workspaceID, ChannelID: &m.ChannelID,
		Remote: m.Remote, Local: m.Local, Body: m.Body, Segments: m.Segments, ConversationID: m.ConversationID, ReplyTo: m.ReplyTo, Claimed: m.Claimed})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// ReplyOf is the reply to an inbound message.
func (q *queries) ReplyOf(ctx context.Context, workspaceID, inboundID uuid.UUID) (ChannelMessage, error) {
	m, err := q.sql.ReplyOf(ctx, q.db, dbsqlc.ReplyOfParams{WorkspaceID: workspaceID, ReplyTo: &inboundID})
	return m, notFound("reply", err)
}

// FinishOutbound records the carrier's answer to a send (its id and status, or the failure)
// on a message still in the state from, and returns the short id of its conversation (""
// when none); false when it has moved on since (a rerun resolved the send first, or a
// delivery report came): then nothing is written, and the caller must not charge the
// message again.
func (q *queries) FinishOutbound(ctx context.Context, workspaceID, id uuid.UUID, from, status string, reason, providerID *string) (string, bool, error) {
	row, err := q.sql.FinishOutboundMessage(ctx, q.db, dbsqlc.FinishOutboundMessageParams{WorkspaceID: workspaceID, ID: id, FromStatus: from,
		Status: status, Reason: reason, ProviderMessageID: providerID})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return row.ConversationShortID, err == nil, err
}

// KeyShareConversations takes the KEY SHARE lock of conversations, each of the workspace at
// the same place of workspaceIDs, in id order, until the transaction ends; one that is gone is
// skipped. A transaction that will write rows naming conversations after rows that erasures
// and deletes lock after the conversations (the sends' finish) takes this lock first.
func (q *queries) KeyShareConversations(ctx context.Context, workspaceIDs, ids []uuid.UUID) error {
	return q.sql.KeyShareConversations(ctx, q.db, dbsqlc.KeyShareConversationsParams{WorkspaceIds: workspaceIDs, Ids: ids})
}

// ClaimReply moves the pending reply to an inbound message to `sending` (as ClaimSend) and
// returns it; false when it has none pending.
func (q *queries) ClaimReply(ctx context.Context, workspaceID, inboundID uuid.UUID) (ChannelMessage, bool, error) {
	m, err := q.sql.ClaimReplySend(ctx, q.db, dbsqlc.ClaimReplySendParams{WorkspaceID: workspaceID, ReplyTo: &inboundID})
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	return m, err == nil, err
}

// ThreadConversation is the newest conversation of a remote party on a channel.
type ThreadConversation struct {
	ID        uuid.UUID
	ShortID   string
	Status    string
	AgentID   *uuid.UUID
	ContactID *uuid.UUID
}

// LatestThread returns the remote party's newest conversation on the channel.
func (q *queries) LatestThread(ctx context.Context, channelID uuid.UUID, remote string) (ThreadConversation, error) {
	r, err := q.sql.ThreadConversation(ctx, q.db, dbsqlc.ThreadConversationParams{ChannelID: channelID, Remote: remote})
	return ThreadConversation(r), notFound("thread", err)
}

// AddThread ties a conversation to a channel and its remote party.
func (q *queries) AddThread(ctx context.Context, workspaceID, conversationID, channelID uuid.UUID, remote string) error {
	return q.sql.InsertThread(ctx, q.db, dbsqlc.InsertThreadParams{ConversationID: conversationID, WorkspaceID: workspaceID, ChannelID: channelID, Remote: remote})
}

// SetOptOut records that remote said STOP to sender (out) or START (not out).
func (q *queries) SetOptOut(ctx context.Context, workspaceID uuid.UUID, sender, remote string, out bool) error {
	if out {
		return q.sql.OptOut(ctx, q.db, dbsqlc.OptOutParams{WorkspaceID: workspaceID, Sender: sender, Remote: remote})
	}
	return q.sql.OptIn(ctx, q.db, dbsqlc.OptInParams{WorkspaceID: workspaceID, Sender: sender, Remote: remote})
}

// OptedOut says whether remote asked sender to stop.
func (q *queries) OptedOut(ctx context.Context, workspaceID uuid.UUID, sender, remote string) (bool, error) {
	return q.sql.OptedOut(ctx, q.db, dbsqlc.OptedOutParams{WorkspaceID: workspaceID, Sender: sender, Remote: remote})
}

// ContactForPhone returns the workspace's contact with this phone number (the oldest live
// one), creating it when there is none.
func (q *queries) ContactForPhone(ctx context.Context, workspaceID uuid.UUID, phone string) (uuid.UUID, error) {
	c, err := q.sql.ContactByPhone(ctx, q.db, dbsqlc.ContactByPhoneParams{WorkspaceID: workspaceID, Phone: &phone})
	if err == nil {
		return c.ID, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, err
	}
	return q.sql.CreatePhoneContact(ctx, q.db, dbsqlc.CreatePhoneContactParams{WorkspaceID: workspaceID, Phone: &phone})
}

// OpenThread opens a conversation on a channel for a remote party with no agent answering
// (nobody holds the channel's inbound seat, or the workspace cannot pay for a reply): the
// message is kept and visible, and the next one continues it.
func (t *Tx) OpenThread(ctx context.Context, workspaceID uuid.UUID, channel string, channelID uuid.UUID, remote string, contactID uuid.UUID) (Conversation, error) {
	conv, err := t.CreateConversation(ctx, workspaceID, channel)
	if err != nil {
		return conv, err
	}
	err = t.sql.OpenAgentConversation(ctx, t.db, dbsqlc.OpenAgentConversationParams{WorkspaceID: workspaceID, ID: conv.ID, ContactID: &contactID})
	if err != nil {
		return conv, err
	}
	return conv, t.AddThread(ctx, workspaceID, conv.ID, channelID, remote)
}

// AssignConversationAgent gives an agentless conversation to the agent answering it now.
func (q *queries) AssignConversationAgent(ctx context.Context, workspaceID, id, agentID uuid.UUID) error {
	return q.sql.AssignConversationAgent(ctx, q.db, dbsqlc.AssignConversationAgentParams{WorkspaceID: workspaceID, ID: id, AgentID: &agentID})
}

// ReportDelivery applies a carrier's delivery report to the outbound message of the channel
// it names and, for a final status, to its campaign's counters (once), in one statement. A
// report on a message whose send has not recorded the carrier's id yet is kept, and applied
// by that send (ApplyEarlyReports).
//
// The send's record may be committing while the report comes: its statements cannot be
// seen yet, and it may have looked for early reports already. So a report that finds no
// message takes the id's lock (LockDeliveryReports), which a send recording that id holds
// from before it looks for early reports until it commits, and looks again: either the send
// has committed (the report applies), or it has not yet looked (it will find the report
// kept). Each report is applied once, whatever the order.
func (s *Store) ReportDelivery(ctx context.Context, workspaceID, channelID uuid.UUID, providerID, status string, reason *string) error {
	known, err := s.applyDelivery(ctx, workspaceID, channelID, providerID, status, reason)
	if err != nil || known {
		return err
	}
	return s.InTx(ctx, func(tx *Tx) error {
		if err := tx.sql.LockDeliveryReports(ctx, tx.db, providerID); err != nil {
			return err
		}
		known, err := tx.applyDelivery(ctx, workspaceID, channelID, providerID, status, reason)
		if err != nil || known {
			return err
		}
		return tx.sql.InsertEarlyReport(ctx, tx.db, dbsqlc.InsertEarlyReportParams{ChannelID: channelID, ProviderMessageID: providerID, Status: status, Reason: reason})
	})
}

// Delivery is one carrier status callback for a channel's outbound message.
type Delivery struct {
	WorkspaceID, ChannelID uuid.UUID
	ProviderID, Status     string
	Reason                 *string
}

// ReportDeliveries applies concurrent reports in one transaction (one WAL flush for them
// all, instead of one each) and returns, for each, whether its message was known. An
// unknown one (the report came before the send recorded the carrier's id) is not kept here:
// the caller passes it to ReportDelivery, whose slow path keeps it. Reports of the same
// message apply in their order; a final status is never replaced, as with one at a time.
//
// Two batches may name the same rows (another replica's batch, the reports a failed batch
// applies one at a time), so each takes them in one order: first the campaigns of its final
// reports, in id order (LockReportedCampaigns), then the messages by channel and carrier id.
func (t *Tx) ReportDeliveries(ctx context.Context, reports []Delivery) ([]bool, error) {
	if err := t.lockReportedCampaigns(ctx, reports); err != nil {
		return nil, err
	}
	order := make([]int, len(reports))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := &reports[a], &reports[b]
		if c := bytes.Compare(ra.ChannelID[:], rb.ChannelID[:]); c != 0 {
			return c
		}
		return strings.Compare(ra.ProviderID, rb.ProviderID)
	})
	known := make([]bool, len(reports))
	for _, i := range order {
		r := reports[i]
		k, err := t.applyDelivery(ctx, r.WorkspaceID, r.ChannelID, r.ProviderID, r.Status, r.Reason)
		if err != nil {
			return nil, err
		}
		known[i] = k
	}
	return known, nil
}

// lockReportedCampaigns locks the campaigns whose sends the final reports among reports name.
func (t *Tx) lockReportedCampaigns(ctx context.Context, reports []Delivery) error {
	var p dbsqlc.LockReportedCampaignsParams
	for _, r := range reports {
		if finalDelivery(r.Status) != nil {
			p.WorkspaceIds = append(p.WorkspaceIds, r.WorkspaceID)
			p.ProviderIds = append(p.ProviderIds, r.ProviderID)
		}
	}
	if len(p.ProviderIds) == 0 {
		return nil
	}
	return t.sql.LockReportedCampaigns(ctx, t.db, p)
}

// ApplyEarlyReports applies the reports that arrived before the send recorded the carrier's
// id; the send's transaction calls it once the id is recorded. It holds the id's lock until
// that transaction ends, so a report arriving meanwhile waits for the commit and then finds
// the message (ReportDelivery).
func (q *queries) ApplyEarlyReports(ctx context.Context, workspaceID, channelID uuid.UUID, providerID string) error {
	if err := q.sql.LockDeliveryReports(ctx, q.db, providerID); err != nil {
		return err
	}
	reports, err := q.sql.TakeEarlyReports(ctx, q.db, dbsqlc.TakeEarlyReportsParams{ChannelID: channelID, ProviderMessageID: providerID})
	if err != nil {
		return err
	}
	slices.SortFunc(reports, func(a, b dbsqlc.TakeEarlyReportsRow) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	for _, r := range reports {
		if _, err := q.applyDelivery(ctx, workspaceID, channelID, providerID, r.Status, r.Reason); err != nil {
			return err
		}
	}
	return nil
}

// applyDelivery applies a report (ApplyDeliveryReport); false when the id names no message of
// the channel nor campaign message of the workspace.
func (q *queries) applyDelivery(ctx context.Context, workspaceID, channelID uuid.UUID, providerID, status string, reason *string) (bool, error) {
	return q.sql.ApplyDeliveryReport(ctx, q.db, dbsqlc.ApplyDeliveryReportParams{ChannelID: channelID, ProviderMessageID: providerID,
		WorkspaceID: workspaceID, Status: status, Reason: reason, Delivery: finalDelivery(status)})
}

// finalDelivery is what a carrier status says of a campaign message's delivery: delivered,
// undelivered, or nil while it is not final.
func finalDelivery(status string) *string {
	var delivery string
	switch status {
	case "delivered":
		delivery = "delivered"
	case "undelivered", "failed":
		delivery = "undelivered"
	default:
		return nil
	}
	return &delivery
}

// ClaimSend moves a pending outbound message to `sending` just before the carrier is
// called; false when it was handed over before (a rerun must not send it again).
func (q *queries) ClaimSend(ctx context.Context, workspaceID, id uuid.UUID) (bool, error) {
	_, err := q.sql.ClaimSend(ctx, q.db, dbsqlc.ClaimSendParams{WorkspaceID: workspaceID, ID: id})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// ThreadOf returns the channel and remote party carrying a conversation.
func (q *queries) ThreadOf(ctx context.Context, workspaceID, conversationID uuid.UUID) (channelID uuid.UUID, remote string, err error) {
	r, err := q.sql.ThreadOf(ctx, q.db, dbsqlc.ThreadOfParams{WorkspaceID: workspaceID, ConversationID: conversationID})
	return r.ChannelID, r.Remote, notFound("thread", err)
}
