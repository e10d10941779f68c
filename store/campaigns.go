package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// Campaign is an outbound campaign row.
type Campaign = dbsqlc.Campaign

// CampaignSend is the decision about one contact of a campaign.
type CampaignSend = dbsqlc.CampaignSend

// AudienceContact is a contact of a campaign's audience not yet decided about.
type AudienceContact = dbsqlc.CampaignAudienceNextRow

// CampaignFields are the fields of a campaign that create and update set.
type CampaignFields = dbsqlc.UpdateCampaignParams

// InsertCampaign creates a campaign with status.
func (q *queries) InsertCampaign(ctx context.Context, status string, f CampaignFields) (Campaign, error) {
	return q.sql.InsertCampaign(ctx, q.db, dbsqlc.InsertCampaignParams{WorkspaceID: f.WorkspaceID, Name: f.Name, Status: status,
		AgentID: f.AgentID, DeploymentID: f.DeploymentID, Audience: f.Audience, FirstMessage: f.FirstMessage, StartAt: f.StartAt,
		WindowStart: f.WindowStart, WindowEnd: f.WindowEnd, Timezone: f.Timezone, RatePerMinute: f.RatePerMinute, Template: f.Template,
		VoicemailRecordingID: f.VoicemailRecordingID})
}

// CampaignByID is a campaign of the workspace.
func (q *queries) CampaignByID(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	c, err := q.sql.CampaignByID(ctx, q.db, dbsqlc.CampaignByIDParams{WorkspaceID: ws, ID: id})
	return c, notFound("campaign", err)
}

// LockCampaign reads a campaign and locks it until the transaction ends.
func (q *queries) LockCampaign(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	c, err := q.sql.LockCampaign(ctx, q.db, dbsqlc.LockCampaignParams{WorkspaceID: ws, ID: id})
	return c, notFound("campaign", err)
}

// ListCampaigns lists the workspace's campaigns, newest first, by status and agent if given.
func (q *queries) ListCampaigns(ctx context.Context, ws uuid.UUID, status *string, agentID *uuid.UUID) ([]Campaign, error) {
	return q.sql.ListCampaigns(ctx, q.db, dbsqlc.ListCampaignsParams{WorkspaceID: ws, Status: status, AgentID: agentID})
}

// UpdateCampaign replaces the fields of a campaign.
func (q *queries) UpdateCampaign(ctx context.Context, f CampaignFields) (Campaign, error) {
	c, err := q.sql.UpdateCampaign(ctx, q.db, f)
	return c, notFound("campaign", err)
}

// SetCampaignStatus moves a campaign to status (the caller checked the transition).
func (q *queries) SetCampaignStatus(ctx context.Context, ws, id uuid.UUID, status string, pausedReason *string) (Campaign, error) {
	c, err := q.sql.SetCampaignStatus(ctx, q.db, dbsqlc.SetCampaignStatusParams{WorkspaceID: ws, ID: id, Status: status, PausedReason: pausedReason})
	return c, notFound("campaign", err)
}

// PauseAgentCampaigns pauses the scheduled and running campaigns of an agent (it is being
// disabled) and returns their ids.
func (q *queries) PauseAgentCampaigns(ctx context.Context, ws, agentID uuid.UUID) ([]uuid.UUID, error) {
	return q.sql.PauseAgentCampaigns(ctx, q.db, dbsqlc.PauseAgentCampaignsParams{WorkspaceID: ws, AgentID: &agentID})
}

// CampaignAudienceNext is up to limit contacts of the audience not yet decided about, but
// the deferred ones.
func (q *queries) CampaignAudienceNext(ctx context.Context, ws, campaignID uuid.UUID, contactIDs, listIDs []uuid.UUID, tags []string, deferred []uuid.UUID, limit int) ([]AudienceContact, error) {
	if deferred == nil {
		deferred = []uuid.UUID{}
	}
	if contactIDs == nil {
		contactIDs = []uuid.UUID{}
	}
	if listIDs == nil {
		listIDs = []uuid.UUID{}
	}
	return q.sql.CampaignAudienceNext(ctx, q.db, dbsqlc.CampaignAudienceNextParams{WorkspaceID: ws, CampaignID: campaignID,
		ContactIds: contactIDs, ListIds: listIDs, Tags: nonNilTags(tags), Deferred: deferred, MaxRows: int32(limit)})
}

// ClaimCampaignSend records the decision about a contact; ok is false when a decision
// already exists (another worker, an earlier run).
func (q *queries) ClaimCampaignSend(ctx context.Context, ws, campaignID, contactID uuid.UUID, status string, reason *string, conversationID *uuid.UUID) (id uuid.UUID, ok bool, err error) {
	id, err = q.sql.ClaimCampaignSend(ctx, q.db, dbsqlc.ClaimCampaignSendParams{WorkspaceID: ws, CampaignID: campaignID, ContactID: contactID,
		Status: status, Reason: reason, ConversationID: conversationID})
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// FinishCampaignSend records the provider's answer to a send.
func (q *queries) FinishCampaignSend(ctx context.Context, ws, id uuid.UUID, status string, reason, providerID *string) error {
	return q.sql.FinishCampaignSend(ctx, q.db, dbsqlc.FinishCampaignSendParams{WorkspaceID: ws, ID: id, Status: status, Reason: reason, ProviderMessageID: providerID})
}

// CountCampaignSend adds to a campaign's counters.
func (q *queries) CountCampaignSend(ctx context.Context, ws, id uuid.UUID, sent, failed, skipped int) error {
	return q.sql.CountCampaignSend(ctx, q.db, dbsqlc.CountCampaignSendParams{WorkspaceID: ws, ID: id, Sent: sent, Failed: failed, Skipped: skipped})
}

// CampaignSends lists a campaign's decisions in the order they were made.
func (q *queries) CampaignSends(ctx context.Context, ws, campaignID uuid.UUID) ([]CampaignSend, error) {
	return q.sql.CampaignSends(ctx, q.db, dbsqlc.CampaignSendsParams{WorkspaceID: ws, CampaignID: campaignID})
}

// ActiveCampaigns lists the scheduled and running campaigns of every workspace.
func (q *queries) ActiveCampaigns(ctx context.Context) ([]dbsqlc.ActiveCampaignsRow, error) {
	return q.sql.ActiveCampaigns(ctx, q.db)
}

// DeploymentInfo is what a campaign needs of a deployment.
type DeploymentInfo struct {
	AgentID     uuid.UUID
	ChannelType string
	// ChannelID is the deployment's channel (a messaging app's campaigns send from it).
	ChannelID *uuid.UUID
}

// CampaignDeployment is a deployment of the workspace, as a campaign sends from it.
func (q *queries) CampaignDeployment(ctx context.Context, ws, id uuid.UUID) (DeploymentInfo, error) {
	r, err := q.sql.CampaignDeployment(ctx, q.db, dbsqlc.CampaignDeploymentParams{WorkspaceID: ws, ID: id})
	return DeploymentInfo(r), notFound("deployment", err)
}

// CampaignSendsInFlight counts the campaign's sends still waiting for the provider's answer,
// decided within the last within.
func (q *queries) CampaignSendsInFlight(ctx context.Context, ws, campaignID uuid.UUID, within time.Duration) (int64, error) {
	return q.sql.CampaignSendsInFlight(ctx, q.db, dbsqlc.CampaignSendsInFlightParams{WorkspaceID: ws, CampaignID: campaignID, WithinSeconds: within.Seconds()})
}

// CampaignCall is what a campaign call's flow needs of its campaign send.
type CampaignCall = dbsqlc.CampaignCallOfRow

// CampaignCallOf is the campaign send an outbound call was placed for.
func (q *queries) CampaignCallOf(ctx context.Context, ws, sendID uuid.UUID) (CampaignCall, error) {
	r, err := q.sql.CampaignCallOf(ctx, q.db, dbsqlc.CampaignCallOfParams{WorkspaceID: ws, ID: sendID})
	return r, notFound("campaign send", err)
}

// ApplyCallStatus applies a campaign call's final carrier status (delivery: delivered or
// undelivered) to its send and campaign counters, once.
func (q *queries) ApplyCallStatus(ctx context.Context, ws, sendID uuid.UUID, status, delivery string) error {
	return q.sql.ApplyCallStatus(ctx, q.db, dbsqlc.ApplyCallStatusParams{WorkspaceID: ws, ID: sendID, CallStatus: status, Delivery: delivery})
}

// ApplyAnsweredBy keeps answering-machine detection's verdict on a campaign call and counts
// it (a person, or a machine), once: first is false when it was applied already.
func (q *queries) ApplyAnsweredBy(ctx context.Context, ws, sendID uuid.UUID, answeredBy string, machine bool) (first bool, err error) {
	n, err := q.sql.ApplyAnsweredBy(ctx, q.db, dbsqlc.ApplyAnsweredByParams{WorkspaceID: ws, ID: sendID, AnsweredBy: answeredBy, Machine: machine})
	return n > 0, err
}
