package store

import (
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// TurnWrite is the conversation part of one turn written by WriteTurns: the messages to
// append to Conversation, or to a new conversation of short id NewShortID (channel "api")
// when Conversation is nil, which WriteTurns then sets (its CreatedAt, the database's clock,
// is not read back: nothing on the way to the answer needs it).
type TurnWrite struct {
	WorkspaceID  uuid.UUID
	Conversation *Conversation
	NewShortID   string
	Messages     []Message
	// Written are the rows Messages became in a conversation continued, in the same order
	// (their seq and version, as AgentTurnState reads them back), once the transaction's
	// batch results are read: in a pipelined transaction, after COMMIT. Nil for a new
	// conversation, and after a failure.
	Written []WrittenMessage
}

// WrittenMessage is the row a message of a TurnWrite became: its seq in the conversation and
// its version (the row's xmin, as WindowMessage.Version).
type WrittenMessage struct {
	Seq     int
	Version int64
}

// WriteTurns appends the messages of many turns (the group commit) in one pipelined batch
// whatever their number: one statement for every conversation continued (their rows locked in
// id order and their seqs reserved as AppendMessages does, the messages numbered from them),
// one INSERT for every new conversation (their ids chosen here) and one for all their
// messages. In a pipelined transaction (Store.Pipelined) the batch waits for the
// transaction's next statement and travels with it; a continued conversation that is gone
// fails it as not found. Turns of one conversation append in the order given.
func (t *Tx) WriteTurns(ctx context.Context, turns []*TurnWrite) error {
	batch := &pgx.Batch{}
	var rows dbsqlc.InsertMessageRowsParams
	var created dbsqlc.CreateConversationsParams
	var continued appendRows
	for _, w := range turns {
		if w.Conversation != nil {
			continued.add(w)
			continue
		}
		w.Conversation = &Conversation{ID: newRowID(), ShortID: w.NewShortID, Channel: "api"}
		created.Ids, created.WorkspaceIds = append(created.Ids, w.Conversation.ID), append(created.WorkspaceIds, w.WorkspaceID)
		created.ShortIds, created.Channels = append(created.ShortIds, w.NewShortID), append(created.Channels, "api")
		created.MessageSeqs = append(created.MessageSeqs, len(w.Messages))
		for i, m := range w.Messages {
			rows.WorkspaceIds, rows.ConversationIds = append(rows.WorkspaceIds, w.WorkspaceID), append(rows.ConversationIds, w.Conversation.ID)
			rows.Seqs, rows.Roles, rows.Contents = append(rows.Seqs, i+1), append(rows.Roles, m.Role), append(rows.Contents, m.Content)
			rows.ToolCalls, rows.ToolResults = append(rows.ToolCalls, nullJSON(m.ToolCalls)), append(rows.ToolResults, nullJSON(m.ToolResults))
		}
	}
	if len(continued.Ids) > 0 {
		if err := continued.queue(batch, t.sql); err != nil {
			return err
		}
	}
	b := batchQueue{batch}
	if len(created.Ids) > 0 {
		if err := t.sql.CreateConversations(ctx, b, created); err != nil {
			return err
		}
	}
	if len(rows.Seqs) > 0 {
		if err := t.sql.InsertMessageRows(ctx, b, rows); err != nil {
			return err
		}
	}
	return t.db.SendBatch(ctx, batch).Close()
}

// appendRows are the messages of the turns continuing their conversations, for one
// AppendManyMessageRows: a conversation continued by several turns of the batch appears once,
// its messages in the turns' order.
type appendRows struct {
	dbsqlc.AppendManyMessageRowsParams
	at    map[uuid.UUID]int // a conversation's place in Ids
	turns []*TurnWrite      // in the order added
}

// queue queues the statement in batch; once its rows are read, each turn's Written is set
// from them. A conversation gone (no row: raise_not_found fails the statement first in a
// pipelined transaction) fails the batch as not found.
func (a *appendRows) queue(batch *pgx.Batch, sql *dbsqlc.Queries) error {
	return queueRows(batch, func(db dbsqlc.DBTX, got bool) error {
		rows, err := sql.AppendManyMessageRows(context.Background(), db, a.AppendManyMessageRowsParams)
		if !got {
			return err
		}
		if err != nil {
			return notFound("conversation", err)
		}
		if len(rows) == 0 {
			return &NotFoundError{What: "conversation"}
		}
		a.written(rows)
		return nil
	})
}

// written hands the rows to the turns: a conversation's messages were numbered in the order
// the turns added them, so its k-th message is its k-th lowest seq.
func (a *appendRows) written(rows []dbsqlc.AppendManyMessageRowsRow) {
	seqs := make(map[uuid.UUID][]WrittenMessage, len(a.Ids))
	for _, r := range rows {
		seqs[r.ConversationID] = append(seqs[r.ConversationID], WrittenMessage{Seq: r.Seq, Version: r.Version})
	}
	for _, s := range seqs {
		slices.SortFunc(s, func(x, y WrittenMessage) int { return cmp.Compare(x.Seq, y.Seq) })
	}
	for _, w := range a.turns {
		s := seqs[w.Conversation.ID]
		if len(s) < len(w.Messages) {
			return // not what was appended: leave Written nil
		}
		w.Written, seqs[w.Conversation.ID] = s[:len(w.Messages):len(w.Messages)], s[len(w.Messages):]
	}
}

func (a *appendRows) add(w *TurnWrite) {
	if len(w.Messages) == 0 {
		return
	}
	a.turns = append(a.turns, w)
	id := w.Conversation.ID
	i, ok := a.at[id]
	if !ok {
		if a.at == nil {
			a.at = map[uuid.UUID]int{}
		}
		i = len(a.Ids)
		a.at[id] = i
		a.WorkspaceIds, a.Ids, a.Counts = append(a.WorkspaceIds, w.WorkspaceID), append(a.Ids, id), append(a.Counts, 0)
	}
	for _, m := range w.Messages {
		a.Counts[i]++
		a.MessageWorkspaceIds, a.ConversationIds = append(a.MessageWorkspaceIds, w.WorkspaceID), append(a.ConversationIds, id)
		a.Positions, a.Roles, a.Contents = append(a.Positions, a.Counts[i]), append(a.Roles, m.Role), append(a.Contents, m.Content)
		a.ToolCalls, a.ToolResults = append(a.ToolCalls, nullJSON(m.ToolCalls)), append(a.ToolResults, nullJSON(m.ToolResults))
	}
}

// InsertTurnRecords writes the records of many turns (the group commit) in one pipelined
// batch: each inserted response and its completed Idempotency-Key, as WriteTurnRecord does.
// A record that finishes a response (Finish) must go through WriteTurnRecord: its outcome
// depends on the row it updates.
func (t *Tx) InsertTurnRecords(ctx context.Context, workspaceIDs []uuid.UUID, records []TurnRecord) error {
	if len(records) == 0 {
		return nil
	}
	batch := &pgx.Batch{}
	b := batchQueue{batch}
	// One statement per workspace for the responses (in the order they came), then the keys.
	var order []uuid.UUID
	byWS := map[uuid.UUID]*dbsqlc.InsertResponsesParams{}
	for i, r := range records {
		ws, resp := workspaceIDs[i], r.Response
		p := byWS[ws]
		if p == nil {
			p = &dbsqlc.InsertResponsesParams{WorkspaceID: ws}
			byWS[ws], order = p, append(order, ws)
		}
		var conversation uuid.UUID // the zero UUID: none (InsertResponses)
		if resp.ConversationID != nil {
			conversation = *resp.ConversationID
		}
		p.Ids, p.ShortIds, p.ConversationIds = append(p.Ids, newRowID()), append(p.ShortIds, resp.ShortID), append(p.ConversationIds, conversation)
		p.Statuses, p.Models = append(p.Statuses, resp.Status), append(p.Models, resp.Model)
		p.Backgrounds, p.Bodies = append(p.Backgrounds, resp.Background), append(p.Bodies, string(resp.Body))
	}
	for _, ws := range order {
		if err := t.sql.InsertResponses(ctx, b, *byWS[ws]); err != nil {
			return err
		}
	}
	for i, r := range records {
		if r.IdempotencyKey == "" {
			continue
		}
		ws, key := workspaceIDs[i], r.IdempotencyKey
		if err := t.sql.CompleteIdempotencyKey(ctx, b, dbsqlc.CompleteIdempotencyKeyParams{WorkspaceID: ws, Key: key, ResponseShortID: &r.Response.ShortID}); err != nil {
			return err
		}
		t.keyNotices = append(t.keyNotices, IdempotencyToken(ws, key))
	}
	return t.db.SendBatch(ctx, batch).Close()
}

// SettleWorkspaces is SettleMany for several workspaces at once (the group commit of a batch
// spanning workspaces), in one pipelined batch whatever their number: their rows locked in id
// order, then each settled by its own statement (SettleWorkspace). In a pipelined transaction
// all of it travels with COMMIT. items[i] are the settlements of workspaceIDs[i], which must
// be distinct.
func (t *Tx) SettleWorkspaces(ctx context.Context, workspaceIDs []uuid.UUID, items [][]Settlement) error {
	batch := &pgx.Batch{}
	if len(workspaceIDs) > 1 {
		if err := t.sql.LockWorkspacesInOrder(ctx, batchQueue{batch}, workspaceIDs); err != nil {
			return err
		}
	}
	for i, ws := range workspaceIDs {
		if err := t.queueSettleMany(batch, ws, items[i]); err != nil {
			return err
		}
	}
	return t.db.SendBatch(ctx, batch).Close()
}
