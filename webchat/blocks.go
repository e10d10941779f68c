package webchat

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// A visitor is their webchat conversation (the widget keeps its token), so a block names the
// conversation's `mc-` id, and Chat refuses that visitor's messages with 403 visitor_blocked.
// The management routes (/api/webchat/blocked-visitors) call these with the caller's
// workspace, so a workspace blocks only its own visitors.

// Block blocks the visitor of a webchat conversation of the workspace; created is false when
// they were blocked already (the block is then returned unchanged).
func (s *Service) Block(ctx context.Context, workspaceID uuid.UUID, visitorID, reason string) (store.BlockedVisitor, bool, error) {
	v, created, err := s.store.BlockWebchatVisitor(ctx, workspaceID, visitorID, strings.TrimSpace(reason))
	if errors.Is(err, store.ErrNotWebchat) {
		return v, false, apierr.Invalid("visitor_id", "not_webchat", "visitor_id must name a webchat conversation; %s is a conversation of another channel.", visitorID)
	}
	if err != nil {
		return v, false, apierr.WithParam(err, "visitor_id")
	}
	return v, created, nil
}

// Unblock lifts a visitor's block and returns it.
func (s *Service) Unblock(ctx context.Context, workspaceID uuid.UUID, visitorID string) (store.BlockedVisitor, error) {
	v, err := s.store.UnblockWebchatVisitor(ctx, workspaceID, visitorID)
	if err != nil {
		return v, apierr.WithParam(err, "id")
	}
	return v, nil
}

// Blocked lists the workspace's blocked visitors, newest block first.
func (s *Service) Blocked(ctx context.Context, workspaceID uuid.UUID) ([]store.BlockedVisitor, error) {
	return s.store.ListWebchatBlockedVisitors(ctx, workspaceID)
}

// refuseBlocked refuses a blocked visitor (a new visitor has no conversation yet, so no
// block). The deployment was usually read with the answer (Deployment's visitorToken); it is
// read here only when it was not read for this conversation.
func (s *Service) refuseBlocked(ctx context.Context, d store.WebchatDeployment, conversation string) error {
	if conversation == "" {
		return nil
	}
	blocked := d.VisitorBlocked && d.Visitor == conversation
	if d.Visitor != conversation {
		switch _, err := s.store.WebchatBlockedVisitor(ctx, d.WorkspaceID, conversation); {
		case err == nil:
			blocked = true
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if blocked {
		return &apierr.Error{Kind: apierr.KindPermission, Code: "visitor_blocked", Message: "This chat is not available to you."}
	}
	return nil
}
