package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// MessageWithUsage is a message as an operator reads it: with the model, tokens and cost of
// the turn whose reply it is. Usage is nil where none is recorded for the message (the
// visitor's messages, greetings, rule answers, a person's replies, turns of old data).
type MessageWithUsage struct {
	Seq         int
	Role        string
	Content     string
	ToolCalls   json.RawMessage
	ToolResults json.RawMessage
	CreatedAt   time.Time
	Usage       *TurnUsage
}

// TurnUsage is what one model turn used, from its ledger row. Latency is not recorded.
type TurnUsage struct {
	Model                     string
	InputTokens, OutputTokens int64
	CostNanoUSD               int64
}

// MessagesWithUsage returns a conversation's messages in order, replies with their usage.
func (q *queries) MessagesWithUsage(ctx context.Context, workspaceID, conversationID uuid.UUID) ([]MessageWithUsage, error) {
	rows, err := q.sql.MessagesWithUsage(ctx, q.db, dbsqlc.MessagesWithUsageParams{WorkspaceID: workspaceID, ConversationID: conversationID})
	return mapRows(rows, func(r dbsqlc.MessagesWithUsageRow) MessageWithUsage {
		m := MessageWithUsage{Seq: r.Seq, Role: r.Role, Content: r.Content, ToolCalls: r.ToolCalls, ToolResults: r.ToolResults, CreatedAt: r.CreatedAt}
		if r.Model != nil && r.InputTokens != nil && r.OutputTokens != nil && r.CostNanoUSD != nil {
			m.Usage = &TurnUsage{Model: *r.Model, InputTokens: *r.InputTokens, OutputTokens: *r.OutputTokens, CostNanoUSD: *r.CostNanoUSD}
		}
		return m
	}), err
}
