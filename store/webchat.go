package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// WebchatDeployment is a deployment as the public webchat routes see it: PublicDeployment,
// the workspace's monthly spend cap and this month's spend, for its budget rules, and
// whether the visitor it was read for is blocked.
type WebchatDeployment struct {
	PublicDeployment
	MonthlyCapNanoUSD *int64
	MonthSpendNanoUSD int64
	// Visitor is the conversation (its `mc-` id) VisitorBlocked was read for; "" when the
	// deployment was read for no visitor, and VisitorBlocked is then false.
	Visitor        string
	VisitorBlocked bool
}

// WebchatDeploymentByID returns a deployment by its id alone (the id is in the embed line;
// the workspace comes from the row), and whether the visitor of conversation visitor (its
// `mc-` id, "" for none) is blocked in the deployment's workspace, in the same statement:
// a returning visitor's message then reads once before its turn, not twice.
func (q *queries) WebchatDeploymentByID(ctx context.Context, id uuid.UUID, visitor string) (WebchatDeployment, error) {
	r, err := q.sql.WebchatDeployment(ctx, q.db, dbsqlc.WebchatDeploymentParams{ID: id, Visitor: visitor})
	return WebchatDeployment{
		PublicDeployment: PublicDeployment{ID: id, WorkspaceID: r.WorkspaceID, AgentID: r.AgentID, ChannelType: r.ChannelType, Config: r.Config,
			WorkspaceName: r.WorkspaceName, WorkspaceStatus: r.WorkspaceStatus, BalanceNanoUSD: r.BalanceNanoUSD},
		MonthlyCapNanoUSD: r.MonthlyCapNanoUSD, MonthSpendNanoUSD: monthSpend(r.SpendMonth, r.MonthSpendNanoUSD, time.Now()),
		Visitor: visitor, VisitorBlocked: r.VisitorBlocked,
	}, notFound("deployment", err)
}

// BlockedVisitor is a webchat visitor an operator blocked. The visitor is their webchat
// conversation: VisitorID is its `mc-` id.
type BlockedVisitor struct {
	VisitorID string
	Reason    string
	CreatedAt time.Time
}

// ErrNotWebchat is returned when a visitor to block names a conversation of another channel.
var ErrNotWebchat = errors.New("store: the conversation is not a webchat conversation")

// BlockWebchatVisitor blocks the visitor of a webchat conversation of the workspace (by its
// `mc-` id). created is false when the visitor was blocked already: the block is then
// returned as it was (its reason unchanged).
func (q *queries) BlockWebchatVisitor(ctx context.Context, workspaceID uuid.UUID, visitorID, reason string) (BlockedVisitor, bool, error) {
	var out BlockedVisitor
	created := false
	err := q.inTx(ctx, func(q *queries) error {
		c, err := q.sql.WebchatConversation(ctx, q.db, dbsqlc.WebchatConversationParams{WorkspaceID: workspaceID, ShortID: visitorID})
		if err != nil {
			return notFound("conversation", err)
		}
		if c.Channel != "webchat" {
			return ErrNotWebchat
		}
		_, err = q.sql.BlockWebchatVisitor(ctx, q.db, dbsqlc.BlockWebchatVisitorParams{WorkspaceID: workspaceID, ConversationID: c.ID, Reason: reason})
		switch {
		case err == nil:
			created = true
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		out, err = q.WebchatBlockedVisitor(ctx, workspaceID, visitorID)
		return err
	})
	return out, created, err
}

// WebchatBlockedVisitor returns the block of a visitor (NotFoundError blocked_visitor when
// the visitor is not blocked).
func (q *queries) WebchatBlockedVisitor(ctx context.Context, workspaceID uuid.UUID, visitorID string) (BlockedVisitor, error) {
	r, err := q.sql.WebchatBlockedVisitor(ctx, q.db, dbsqlc.WebchatBlockedVisitorParams{WorkspaceID: workspaceID, ShortID: visitorID})
	return BlockedVisitor{VisitorID: r.ShortID, Reason: r.Reason, CreatedAt: r.CreatedAt}, notFound("blocked_visitor", err)
}

// ListWebchatBlockedVisitors lists the workspace's blocked visitors, newest block first.
func (q *queries) ListWebchatBlockedVisitors(ctx context.Context, workspaceID uuid.UUID) ([]BlockedVisitor, error) {
	rows, err := q.sql.ListWebchatBlockedVisitors(ctx, q.db, workspaceID)
	return mapRows(rows, func(r dbsqlc.ListWebchatBlockedVisitorsRow) BlockedVisitor {
		return BlockedVisitor{VisitorID: r.ShortID, Reason: r.Reason, CreatedAt: r.CreatedAt}
	}), err
}

// UnblockWebchatVisitor lifts a visitor's block and returns it (NotFoundError
// blocked_visitor when there was none).
func (q *queries) UnblockWebchatVisitor(ctx context.Context, workspaceID uuid.UUID, visitorID string) (BlockedVisitor, error) {
	r, err := q.sql.UnblockWebchatVisitor(ctx, q.db, dbsqlc.UnblockWebchatVisitorParams{WorkspaceID: workspaceID, ShortID: visitorID})
	return BlockedVisitor{VisitorID: visitorID, Reason: r.Reason, CreatedAt: r.CreatedAt}, notFound("blocked_visitor", err)
}
