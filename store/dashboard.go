package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// DayUsage is a workspace's spend and charged turns of one UTC day.
type DayUsage struct {
	Day          time.Time
	SpendNanoUSD int64
	Turns        int64
}

// DailyUsage lists spend and turns per UTC day since since; days without any are absent.
func (q *queries) DailyUsage(ctx context.Context, workspaceID uuid.UUID, since time.Time) ([]DayUsage, error) {
	rows, err := q.sql.DailyUsage(ctx, q.db, dbsqlc.DailyUsageParams{WorkspaceID: workspaceID, Since: since})
	return mapRows(rows, func(r dbsqlc.DailyUsageRow) DayUsage { return DayUsage(r) }), err
}

// AgentUsage is an agent's spend and charged turns over a period.
type AgentUsage struct {
	ID           uuid.UUID
	Name         string
	SpendNanoUSD int64
	Turns        int64
}

// TopAgents ranks the workspace's agents by spend since since, at most n.
func (q *queries) TopAgents(ctx context.Context, workspaceID uuid.UUID, since time.Time, n int) ([]AgentUsage, error) {
	rows, err := q.sql.TopAgents(ctx, q.db, dbsqlc.TopAgentsParams{WorkspaceID: workspaceID, Since: since, MaxRows: int32(min(n, 1000))}) //nolint:gosec // bounded
	return mapRows(rows, func(r dbsqlc.TopAgentsRow) AgentUsage { return AgentUsage(r) }), err
}

// ConversationFilter narrows ListConversations; zero fields match everything.
type ConversationFilter struct {
	AgentID *uuid.UUID
	Channel string
	Status  string
	Label   string
	Limit   int
}

// ConversationRow is a conversation in a list.
type ConversationRow struct {
	ID         uuid.UUID
	ShortID    string
	Channel    string
	Status     string
	Labels     []string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	MessageSeq int // how many messages it has
	AgentID    *uuid.UUID
	AgentName  string
}

// ListConversations lists the workspace's conversations, newest first.
func (q *queries) ListConversations(ctx context.Context, workspaceID uuid.UUID, f ConversationFilter) ([]ConversationRow, error) {
	if f.Limit <= 0 || f.Limit > 500 {
		f.Limit = 100
	}
	rows, err := q.sql.ListConversations(ctx, q.db, dbsqlc.ListConversationsParams{WorkspaceID: workspaceID, AgentID: f.AgentID,
		Channel: f.Channel, Status: f.Status, Label: f.Label, MaxRows: int32(f.Limit)}) //nolint:gosec // bounded above
	return mapRows(rows, func(r dbsqlc.ListConversationsRow) ConversationRow { return ConversationRow(r) }), err
}
