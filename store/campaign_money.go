package store

import (
	"context"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// Campaign pause reasons for money (the others are the campaigns package's).
const (
	PausedWorkspaceSuspended = "workspace_suspended"
)

// PauseWorkspaceCampaigns pauses the scheduled and running campaigns of a workspace with
// reason and returns their ids.
func (q *queries) PauseWorkspaceCampaigns(ctx context.Context, ws uuid.UUID, reason string) ([]uuid.UUID, error) {
	return q.sql.PauseWorkspaceCampaigns(ctx, q.db, dbsqlc.PauseWorkspaceCampaignsParams{WorkspaceID: ws, Reason: reason})
}

// SendConversation is the conversation a campaign send opened.
type SendConversation = dbsqlc.CampaignSendConversationRow

// CampaignSendConversation is the conversation the send opened.
func (q *queries) CampaignSendConversation(ctx context.Context, ws, sendID uuid.UUID) (SendConversation, error) {
	r, err := q.sql.CampaignSendConversation(ctx, q.db, dbsqlc.CampaignSendConversationParams{WorkspaceID: ws, ID: sendID})
	return r, notFound("conversation", err)
}

// SuspendWorkspace suspends the workspace named name and, in the same transaction, pauses
// its scheduled and running campaigns with paused_reason workspace_suspended (resuming the
// workspace does not restart them: a person starts each again). The suspension is announced
// as SetWorkspaceStatus does.
//
// The campaigns are paused before the workspace's row is updated: a campaign's worker holds
// its campaign's row until it settles on the workspace's row (a send's decision, its
// answer's charge), so taking the workspace's first deadlocked with a running campaign.
func (s *Store) SuspendWorkspace(ctx context.Context, name string) (Workspace, error) {
	var w Workspace
	err := s.InTx(ctx, func(tx *Tx) error {
		found, err := tx.WorkspaceByName(ctx, name)
		if err != nil {
			return err
		}
		if _, err := tx.PauseWorkspaceCampaigns(ctx, found.ID, PausedWorkspaceSuspended); err != nil {
			return err
		}
		w, err = tx.SetWorkspaceStatus(ctx, name, WorkspaceSuspended)
		return err
	})
	return w, err
}
