package channels

import (
	"bytes"
	"context"
	"log/slog"
	"slices"

	"github.com/google/uuid"

	"switchboard/store"
)

// finish records the carrier's answer to a send (its id, or its refusal) on a message still
// `sending`, applies the delivery reports that came first, and charges it once accepted. A
// message that moved on meanwhile (a rerun resolved it first) is left as it is, and not
// charged again.
//
// The records of concurrent sends are committed together (batcher): one transaction, one
// fsync and one lock of each workspace's row (store.Tx.SettleWorkspaces) for the batch,
// instead of one each per reply. It returns once its own record is durable.
func (s *Service) finish(ctx context.Context, c store.Channel, reply store.ChannelMessage, id string, sendErr error) error {
	if sendErr != nil {
		s.log.WarnContext(ctx, "the carrier refused a reply", slog.String("channel", c.ID.String()), slog.String("error", sendErr.Error()))
	}
	return s.finishes.do(finishing{c: c, reply: reply, id: id, sendErr: sendErr}, s.commitFinishes)
}

// finishing is one send's record.
type finishing struct {
	c       store.Channel
	reply   store.ChannelMessage
	id      string
	sendErr error
}

// commitFinishes writes a batch in one transaction and wakes its records; if that fails,
// each is written again alone, so one record's failure fails only that record. The carrier
// has answered: it is recorded even if the job that sent it is being cancelled.
func (s *Service) commitFinishes(batch []*batched[finishing]) {
	ctx := context.Background()
	err := s.store.InTx(ctx, func(tx *store.Tx) error { return s.writeFinishes(ctx, tx, batch) })
	if err == nil || len(batch) == 1 {
		for _, f := range batch {
			f.finish(err)
		}
		return
	}
	s.log.Warn("recording a batch of sends failed; recording them one by one", slog.Int("sends", len(batch)), slog.String("error", err.Error()))
	for _, f := range batch {
		f.finish(s.store.InTx(ctx, func(tx *store.Tx) error { return s.writeFinishes(ctx, tx, []*batched[finishing]{f}) }))
	}
}

// writeFinishes records each send of the batch, then settles the charges of those the
// carrier accepted, per workspace in id order (as the turns' group commit does), last. The
// batch's conversations are locked first (lockConversations).
func (s *Service) writeFinishes(ctx context.Context, tx *store.Tx, batch []*batched[finishing]) error {
	if err := lockConversations(ctx, tx, batch); err != nil {
		return err
	}
	var workspaces []uuid.UUID
	byWS := map[uuid.UUID][]store.Settlement{}
	for _, f := range batch {
		items, err := s.writeFinish(ctx, tx, &f.v)
		if err != nil {
			return err
		}
		if len(items) == 0 {
			continue
		}
		ws := f.v.c.WorkspaceID
		if _, ok := byWS[ws]; !ok {
			workspaces = append(workspaces, ws)
		}
		byWS[ws] = append(byWS[ws], items...)
	}
	if len(workspaces) == 0 {
		return nil
	}
	slices.SortFunc(workspaces, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	items := make([][]store.Settlement, len(workspaces))
	for i, ws := range workspaces {
		items[i] = byWS[ws]
	}
	return tx.SettleWorkspaces(ctx, workspaces, items)
}

// lockConversations takes the KEY SHARE lock of the batch's conversations, in id order,
// before its first write. Each charge's ledger row takes it anyway, for its reference to the
// conversation; taken there, last, it came after the sends' rows and the workspaces' rows,
// while an erasure of a contact (and a delete of conversations) locks the conversations first
// and the sends' rows after them: each could hold what the other waited for, and PostgreSQL
// aborted one (TestASendsFinishWaitsForAnErasureInsteadOfDeadlocking). Taken first, whichever
// reaches the conversation first goes on. It also keeps a conversation from being deleted
// between the send's record, which reads its short id, and the charge that names it.
func lockConversations(ctx context.Context, tx *store.Tx, batch []*batched[finishing]) error {
	workspaces, ids := make([]uuid.UUID, 0, len(batch)), make([]uuid.UUID, 0, len(batch))
	for _, f := range batch {
		if id := f.v.reply.ConversationID; id != nil {
			workspaces, ids = append(workspaces, f.v.c.WorkspaceID), append(ids, *id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return tx.KeyShareConversations(ctx, workspaces, ids)
}

// writeFinish records one send and returns its charge, to settle with the batch's.
func (s *Service) writeFinish(ctx context.Context, tx *store.Tx, f *finishing) ([]store.Settlement, error) {
	c, reply := f.c, f.reply
	if f.sendErr != nil {
		_, _, err := tx.FinishOutbound(ctx, c.WorkspaceID, reply.ID, "sending", "failed", ptr(publicMessage(f.sendErr)), nil)
		return nil, err
	}
	short, recorded, err := tx.FinishOutbound(ctx, c.WorkspaceID, reply.ID, "sending", "queued", nil, &f.id)
	if err != nil || !recorded {
		return nil, err
	}
	if err := tx.ApplyEarlyReports(ctx, c.WorkspaceID, c.ID, f.id); err != nil {
		return nil, err
	}
	var conv uuid.UUID
	convID := reply.ConversationID
	if convID != nil && short != "" {
		conv = *convID // its short id came with the finish
	} else {
		convID = nil // deleted since the reply was written (a bulk delete, retention): the charge names none
	}
	fctx, fl := foldCharges(ctx, conv, short)
	if err := s.charge(fctx, tx, c, Metered{Remote: reply.Remote, Body: reply.Body, Direction: "outbound", ConversationID: convID}); err != nil {
		return nil, err
	}
	return fl.items, nil
}
