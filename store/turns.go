package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/shortid"
)

// Tx is a transaction: the writes of one turn (messages, response, ledger, events) commit
// together or not at all.
type Tx struct {
	tx      pgx.Tx
	notices []string // announcements of the events appended, sent after commit
}

// InTx runs fn in a transaction, committed when fn returns nil. The events it appended are
// announced after the commit (Announce).
func (s *Store) InTx(ctx context.Context, fn func(*Tx) error) error {
	var t *Tx
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t = &Tx{tx: tx}
		return fn(t)
	})
	if err == nil && len(t.notices) > 0 {
		s.announce(context.WithoutCancel(ctx), t.notices)
	}
	return err
}

// announce sends committed events' notices to every replica's listener. It runs after the
// commit, outside the transaction: a NOTIFY inside it would take PostgreSQL's cluster-wide
// notification lock at commit and serialize all committing turns. A notice lost to a crash
// here only delays a live tail: the outbox is the record, and the hub catches up from it.
func (s *Store) announce(ctx context.Context, notices []string) {
	_, _ = s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, EventChannel, notices)
}

// Conversation is a thread of messages in a workspace.
type Conversation struct {
	ID        uuid.UUID
	ShortID   string
	Channel   string
	CreatedAt time.Time
}

// ConversationByRef finds a conversation of the workspace by its `mc-` short id or its UUID.
func (s *Store) ConversationByRef(ctx context.Context, workspaceID uuid.UUID, ref string) (Conversation, error) {
	var c Conversation
	query := `SELECT id, short_id, channel, created_at FROM conversations WHERE workspace_id = $1 AND short_id = $2`
	var arg any = ref
	if id, err := uuid.Parse(ref); err == nil {
		query = `SELECT id, short_id, channel, created_at FROM conversations WHERE workspace_id = $1 AND id = $2`
		arg = id
	}
	err := s.pool.QueryRow(ctx, query, workspaceID, arg).Scan(&c.ID, &c.ShortID, &c.Channel, &c.CreatedAt)
	return c, notFound(err)
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
func (s *Store) History(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]Message, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT role, content, tool_calls, tool_results FROM messages
		 WHERE workspace_id = $1 AND conversation_id = $2 ORDER BY seq`, workspaceID, conversationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Message, error) {
		var m Message
		err := r.Scan(&m.Role, &m.Content, &m.ToolCalls, &m.ToolResults)
		return m, err
	})
}

// CreateConversation opens a conversation with a new `mc-` id.
func (t *Tx) CreateConversation(ctx context.Context, workspaceID uuid.UUID, channel string) (Conversation, error) {
	c := Conversation{ShortID: shortid.New(shortid.Conversation), Channel: channel}
	err := t.tx.QueryRow(ctx,
		`INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, $2, $3) RETURNING id, created_at`,
		workspaceID, c.ShortID, channel).Scan(&c.ID, &c.CreatedAt)
	return c, err
}

// AppendMessages adds messages at the end of a conversation. The conversation row is locked
// so that concurrent turns on one conversation append in turn, never interleaved.
func (t *Tx) AppendMessages(ctx context.Context, workspaceID, conversationID uuid.UUID, msgs []Message) error {
	var last int
	err := t.tx.QueryRow(ctx,
		`UPDATE conversations SET message_seq = message_seq + $3, updated_at = now()
		 WHERE workspace_id = $1 AND id = $2 RETURNING message_seq - $3`,
		workspaceID, conversationID, len(msgs)).Scan(&last)
	if err != nil {
		return notFound(err)
	}
	rows := make([][]any, len(msgs))
	for i, m := range msgs {
		rows[i] = []any{workspaceID, conversationID, last + i + 1, m.Role, m.Content, nullJSON(m.ToolCalls), nullJSON(m.ToolResults)}
	}
	_, err = t.tx.CopyFrom(ctx, pgx.Identifier{"messages"},
		[]string{"workspace_id", "conversation_id", "seq", "role", "content", "tool_calls", "tool_results"}, pgx.CopyFromRows(rows))
	return err
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
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

// InsertResponse stores a response record.
func (t *Tx) InsertResponse(ctx context.Context, workspaceID uuid.UUID, r StoredResponse) error {
	_, err := t.tx.Exec(ctx,
		`INSERT INTO responses (workspace_id, short_id, conversation_id, status, model, background, body) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		workspaceID, r.ShortID, r.ConversationID, r.Status, r.Model, r.Background, string(r.Body))
	return err
}

// FinishResponse gives an unfinished response its final status and body. It fails with
// ErrNotFound when the response already finished (a sweep or another run got there first),
// which rolls back the caller's transaction: a turn is committed at most once.
func (t *Tx) FinishResponse(ctx context.Context, workspaceID uuid.UUID, r StoredResponse) error {
	tag, err := t.tx.Exec(ctx,
		`UPDATE responses SET status = $3, conversation_id = coalesce($4, conversation_id), body = $5, updated_at = now()
		 WHERE workspace_id = $1 AND short_id = $2 AND status IN ('queued', 'in_progress')`,
		workspaceID, r.ShortID, r.Status, r.ConversationID, string(r.Body))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// StartResponse moves a queued response to in_progress; false when it is not queued.
func (s *Store) StartResponse(ctx context.Context, workspaceID uuid.UUID, shortID string) (bool, error) {
	tag, err := s.pool.Exec(ctx,
		`UPDATE responses SET status = 'in_progress', body = jsonb_set(body::jsonb, '{status}', '"in_progress"')::text, updated_at = now()
		 WHERE workspace_id = $1 AND short_id = $2 AND status = 'queued'`, workspaceID, shortID)
	return tag.RowsAffected() == 1, err
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
func (t *Tx) FailStuckResponses(ctx context.Context, olderThan time.Duration, errBody json.RawMessage) ([]Stuck, error) {
	rows, err := t.tx.Query(ctx,
		`WITH failed AS (
			UPDATE responses SET status = 'failed', updated_at = now(),
				body = (body::jsonb || jsonb_build_object('status', 'failed', 'error', $2::jsonb))::text
			WHERE status IN ('queued', 'in_progress') AND created_at < now() - $1::interval
			RETURNING workspace_id, short_id, conversation_id)
		 SELECT f.workspace_id, f.short_id, c.short_id FROM failed f LEFT JOIN conversations c ON c.id = f.conversation_id`,
		olderThan.String(), string(errBody))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Stuck, error) {
		var s Stuck
		err := r.Scan(&s.WorkspaceID, &s.ShortID, &s.Conversation)
		return s, err
	})
}

// ResponseByShortID finds a stored response of the workspace.
func (s *Store) ResponseByShortID(ctx context.Context, workspaceID uuid.UUID, id string) (StoredResponse, error) {
	var r StoredResponse
	var body string
	err := s.pool.QueryRow(ctx,
		`SELECT id, workspace_id, short_id, conversation_id, status, model, background, body
		 FROM responses WHERE workspace_id = $1 AND short_id = $2`,
		workspaceID, id).Scan(&r.ID, &r.WorkspaceID, &r.ShortID, &r.ConversationID, &r.Status, &r.Model, &r.Background, &body)
	r.Body = json.RawMessage(body)
	return r, notFound(err)
}
