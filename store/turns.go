package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/shortid"
	"switchboard/store/internal/dbsqlc"
)

// Conversation is a thread of messages in a workspace.
type Conversation struct {
	ID        uuid.UUID
	ShortID   string
	Channel   string
	CreatedAt time.Time
}

// ConversationByRef finds a conversation of the workspace by its `mc-` short id or its UUID.
func (q *queries) ConversationByRef(ctx context.Context, workspaceID uuid.UUID, ref string) (Conversation, error) {
	if id, err := uuid.Parse(ref); err == nil {
		r, err := q.sql.ConversationByID(ctx, q.db, dbsqlc.ConversationByIDParams{WorkspaceID: workspaceID, ID: id})
		return Conversation(r), notFound("conversation", err)
	}
	r, err := q.sql.ConversationByShortID(ctx, q.db, dbsqlc.ConversationByShortIDParams{WorkspaceID: workspaceID, ShortID: ref})
	return Conversation(r), notFound("conversation", err)
}

// Message is a stored message. ToolCalls and ToolResults are the JSON the turn pipeline
// wrote; the store does not interpret them.
type Message struct {
	Role        string
	Content     string
	ToolCalls   json.RawMessage
	ToolResults json.RawMessage
}

// History returns the conversation's messages in order.
func (q *queries) History(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]Message, error) {
	rows, err := q.sql.History(ctx, q.db, dbsqlc.HistoryParams{WorkspaceID: workspaceID, ConversationID: conversationID})
	return mapRows(rows, func(r dbsqlc.HistoryRow) Message {
		return Message{Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolResults: r.ToolResults}
	}), err
}

// HistoryWindow returns the newest messages of the conversation, in order: at most
// maxMessages, whose sizes add up to at most maxBytes (see the HistoryWindow query). An
// older message that does not fit is left out with everything before it.
func (q *queries) HistoryWindow(ctx context.Context, workspaceID, conversationID uuid.UUID, maxMessages int, maxBytes int64) ([]Message, error) {
	rows, err := q.sql.HistoryWindow(ctx, q.db, dbsqlc.HistoryWindowParams{WorkspaceID: workspaceID, ConversationID: conversationID,
		MaxMessages: maxMessages, MaxBytes: maxBytes})
	return mapRows(rows, func(r dbsqlc.HistoryWindowRow) Message {
		return Message{Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolResults: r.ToolResults}
	}), err
}

// CreateConversation opens a conversation with a new `mc-` id.
func (q *queries) CreateConversation(ctx context.Context, workspaceID uuid.UUID, channel string) (Conversation, error) {
	return q.CreateConversationAs(ctx, workspaceID, shortid.New(shortid.Conversation), channel)
}

// CreateConversationAs opens a conversation under an `mc-` id chosen before (one a stream
// announced before the turn committed).
func (q *queries) CreateConversationAs(ctx context.Context, workspaceID uuid.UUID, shortID, channel string) (Conversation, error) {
	c := Conversation{ID: newRowID(), ShortID: shortID, Channel: channel}
	createdAt, err := q.sql.CreateConversation(ctx, q.db, dbsqlc.CreateConversationParams{ID: c.ID, WorkspaceID: workspaceID, ShortID: c.ShortID, Channel: channel})
	c.CreatedAt = createdAt
	return c, err
}

// AppendMessages adds messages at the end of a conversation. The conversation row is locked
// so that concurrent turns on one conversation append in turn, never interleaved.
func (q *queries) AppendMessages(ctx context.Context, workspaceID, conversationID uuid.UUID, msgs []Message) error {
	last, err := q.sql.ReserveMessageSeqs(ctx, q.db, dbsqlc.ReserveMessageSeqsParams{
		Count: len(msgs), WorkspaceID: workspaceID, ID: conversationID})
	if err != nil {
		return notFound("conversation", err)
	}
	rows := make([]dbsqlc.InsertMessagesParams, len(msgs))
	for i, m := range msgs {
		rows[i] = dbsqlc.InsertMessagesParams{WorkspaceID: workspaceID, ConversationID: conversationID, Seq: last + i + 1,
			Role: m.Role, Content: m.Content, ToolCalls: nullJSON(m.ToolCalls), ToolResults: nullJSON(m.ToolResults)}
	}
	_, err = q.sql.InsertMessages(ctx, q.db, rows)
	return err
}

// nullJSON stores absent JSON as NULL rather than as an (invalid) empty document.
func nullJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Charge is one ledger entry.
type Charge struct {
	AmountNanoUSD  int64 // positive: the amount spent
	Category       string
	Model          string
	InputTokens    int64
	OutputTokens   int64
	ConversationID *uuid.UUID
}

// StoredResponse is a response record of /v1/responses.
type StoredResponse struct {
	ID             uuid.UUID
	WorkspaceID    uuid.UUID
	ShortID        string
	ConversationID *uuid.UUID // nil until a background turn has run
	Status         string
	Model          string
	Background     bool
	Body           json.RawMessage
}

// InsertResponse stores a response record under a new ID (r.ID is not read).
func (q *queries) InsertResponse(ctx context.Context, workspaceID uuid.UUID, r StoredResponse) error {
	return q.sql.InsertResponse(ctx, q.db, dbsqlc.InsertResponseParams{ID: newRowID(), WorkspaceID: workspaceID, ShortID: r.ShortID,
		ConversationID: r.ConversationID, Status: r.Status, Model: r.Model, Background: r.Background, Body: string(r.Body)})
}

// FinishResponse gives an unfinished response its final status and body. It fails with
// ErrNotFound when the response already finished (a sweep or another run got there first),
// which rolls back the caller's transaction: a turn is committed at most once.
func (q *queries) FinishResponse(ctx context.Context, workspaceID uuid.UUID, r StoredResponse) error {
	n, err := q.sql.FinishResponse(ctx, q.db, dbsqlc.FinishResponseParams{Status: r.Status, ConversationID: r.ConversationID,
		Body: string(r.Body), WorkspaceID: workspaceID, ShortID: r.ShortID})
	return affected("unfinished response", n, err)
}

// StartResponse moves a queued response to in_progress; false when it is not queued.
func (q *queries) StartResponse(ctx context.Context, workspaceID uuid.UUID, shortID string) (bool, error) {
	n, err := q.sql.StartResponse(ctx, q.db, dbsqlc.StartResponseParams{WorkspaceID: workspaceID, ShortID: shortID})
	return n == 1, err
}

// Stuck is a background response failed by the sweep.
type Stuck struct {
	WorkspaceID  uuid.UUID
	ShortID      string
	Conversation *string // `mc-` id, when the turn had one
}

// FailStuckResponses fails the background responses still unfinished after olderThan,
// storing errBody as their `error`, and returns them so the caller can announce them in
// the same transaction.
func (q *queries) FailStuckResponses(ctx context.Context, olderThan time.Duration, errBody json.RawMessage) ([]Stuck, error) {
	rows, err := q.sql.FailStuckResponses(ctx, q.db, dbsqlc.FailStuckResponsesParams{ErrorBody: string(errBody), OlderThan: olderThan.String()})
	return mapRows(rows, func(r dbsqlc.FailStuckResponsesRow) Stuck {
		return Stuck{WorkspaceID: r.WorkspaceID, ShortID: r.ShortID, Conversation: r.ConversationShortID}
	}), err
}

// ResponseByShortID finds a stored response of the workspace.
func (q *queries) ResponseByShortID(ctx context.Context, workspaceID uuid.UUID, id string) (StoredResponse, error) {
	r, err := q.sql.ResponseByShortID(ctx, q.db, dbsqlc.ResponseByShortIDParams{WorkspaceID: workspaceID, ShortID: id})
	return StoredResponse{ID: r.ID, WorkspaceID: r.WorkspaceID, ShortID: r.ShortID, ConversationID: r.ConversationID, Status: r.Status,
		Model: r.Model, Background: r.Background, Body: json.RawMessage(r.Body)}, notFound("response", err)
}
