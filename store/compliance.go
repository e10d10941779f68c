package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// ComplianceAcceptance is a workspace's acceptance of one version of the outbound
// compliance acknowledgment: who accepted it (as they were then), and when.
type ComplianceAcceptance struct {
	WorkspaceID uuid.UUID
	Version     string
	UserID      *uuid.UUID // nil once the user is deleted; the email stays
	UserEmail   string
	UserRole    string
	AcceptedAt  time.Time
}

func complianceAcceptance(a dbsqlc.ComplianceAcceptance, err error) (ComplianceAcceptance, error) {
	if err != nil {
		return ComplianceAcceptance{}, notFound("compliance_acceptance", err)
	}
	return ComplianceAcceptance{WorkspaceID: a.WorkspaceID, Version: a.Version, UserID: a.UserID, UserEmail: a.UserEmail,
		UserRole: a.UserRole, AcceptedAt: a.AcceptedAt}, nil
}

// AcceptCompliance records that the user (an owner or admin of the workspace, as the caller
// checked) accepted version. Accepting a version already accepted keeps the first record.
func (q *queries) AcceptCompliance(ctx context.Context, workspaceID uuid.UUID, version string, userID uuid.UUID, email, role string) (ComplianceAcceptance, error) {
	return complianceAcceptance(q.sql.AcceptCompliance(ctx, q.db, dbsqlc.AcceptComplianceParams{WorkspaceID: workspaceID, Version: version,
		UserID: &userID, UserEmail: email, UserRole: role}))
}

// ComplianceAcceptance is the workspace's acceptance of version; ErrNotFound when it has not
// accepted that version.
func (q *queries) ComplianceAcceptance(ctx context.Context, workspaceID uuid.UUID, version string) (ComplianceAcceptance, error) {
	return complianceAcceptance(q.sql.ComplianceAcceptance(ctx, q.db, dbsqlc.ComplianceAcceptanceParams{WorkspaceID: workspaceID, Version: version}))
}
