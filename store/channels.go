package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/gen/dbsqlc"
)

// Channel is a connected channel (a phone number, a messaging account, a webchat site).
type Channel struct {
	ID           uuid.UUID
	WorkspaceID  uuid.UUID
	Provider     string
	Name         string
	Config       json.RawMessage
	InboundAgent *uuid.UUID // the agent holding the inbound seat, if any
	CreatedAt    time.Time
}

func toChannel(c dbsqlc.ListChannelsRow) Channel {
	return Channel{ID: c.ID, WorkspaceID: c.WorkspaceID, Provider: c.Provider, Name: c.Name, Config: c.Config,
		InboundAgent: c.InboundAgent, CreatedAt: c.CreatedAt}
}

// CreateChannel stores a channel.
func (q *queries) CreateChannel(ctx context.Context, workspaceID uuid.UUID, provider, name string, config json.RawMessage) (Channel, error) {
	id, err := q.sql.CreateChannel(ctx, q.db, dbsqlc.CreateChannelParams{WorkspaceID: workspaceID, Provider: provider, Name: name, Config: config})
	if err != nil {
		return Channel{}, err
	}
	return q.ChannelByID(ctx, workspaceID, id)
}

// ChannelByID returns a channel of the workspace.
func (q *queries) ChannelByID(ctx context.Context, workspaceID, id uuid.UUID) (Channel, error) {
	c, err := q.sql.ChannelByID(ctx, q.db, dbsqlc.ChannelByIDParams{WorkspaceID: workspaceID, ID: id})
	return toChannel(dbsqlc.ListChannelsRow(c)), notFound("channel", err)
}

// ListChannels lists the workspace's channels, newest first.
func (q *queries) ListChannels(ctx context.Context, workspaceID uuid.UUID) ([]Channel, error) {
	rows, err := q.sql.ListChannels(ctx, q.db, workspaceID)
	return mapRows(rows, toChannel), err
}

// Deploy is a request to deploy an agent.
type Deploy struct {
	AgentID     uuid.UUID
	ChannelType string
	ChannelID   *uuid.UUID // a channel row; nil for a deployment by channel type alone
	TakeOver    bool       // move the inbound seat to this agent
	Config      json.RawMessage
}

// Deployment is the outcome of a Deploy.
type Deployment struct {
	ID          uuid.UUID
	ChannelType string
	ChannelName string
	Inbound     bool
	Replaced    *uuid.UUID // the agent that lost the inbound seat
}

// DeployAgent deploys an agent, following the seat rules: an empty inbound seat is taken; a
// held one moves only with TakeOver (the previous holder stays deployed, outbound only);
// otherwise the agent is deployed for outbound. The channel row is locked so that two
// deploys to one channel decide in turn; the unique index on inbound seats backs it up.
func (q *queries) DeployAgent(ctx context.Context, workspaceID uuid.UUID, d Deploy) (Deployment, error) {
	var out Deployment
	err := q.inTx(ctx, func(q *queries) error {
		var err error
		out, err = q.deploy(ctx, workspaceID, d)
		return err
	})
	return out, err
}

func (q *queries) deploy(ctx context.Context, workspaceID uuid.UUID, d Deploy) (Deployment, error) {
	out := Deployment{ChannelType: d.ChannelType}
	if d.ChannelID == nil {
		id, err := q.sql.DeployByType(ctx, q.db, dbsqlc.DeployByTypeParams{WorkspaceID: workspaceID, AgentID: d.AgentID,
			ChannelType: d.ChannelType, Config: d.Config})
		out.ID = id
		return out, err
	}
	ch, err := q.sql.LockChannel(ctx, q.db, dbsqlc.LockChannelParams{WorkspaceID: workspaceID, ID: *d.ChannelID})
	if err != nil {
		return out, notFound("channel", err)
	}
	out.ChannelType, out.ChannelName = ch.Provider, ch.Name
	holder, err := q.sql.InboundHolder(ctx, q.db, d.ChannelID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return out, err
	}
	switch {
	case err != nil, holder == d.AgentID:
		out.Inbound = true
	case d.TakeOver:
		if err := q.sql.VacateInboundSeat(ctx, q.db, d.ChannelID); err != nil {
			return out, err
		}
		out.Inbound, out.Replaced = true, &holder
	}
	r, err := q.sql.DeployToChannel(ctx, q.db, dbsqlc.DeployToChannelParams{WorkspaceID: workspaceID, AgentID: d.AgentID,
		ChannelType: out.ChannelType, ChannelID: d.ChannelID, Inbound: out.Inbound, Config: d.Config})
	out.ID, out.Inbound = r.ID, r.Inbound
	return out, err
}

// AgentDeployments lists the channel types an agent is deployed to, with each deployment id
// (the oldest, when an agent is deployed twice on one type).
func (q *queries) AgentDeployments(ctx context.Context, workspaceID, agentID uuid.UUID) (map[string]uuid.UUID, error) {
	rows, err := q.sql.AgentDeployments(ctx, q.db, dbsqlc.AgentDeploymentsParams{WorkspaceID: workspaceID, AgentID: agentID})
	if err != nil {
		return nil, err
	}
	out := map[string]uuid.UUID{}
	for _, r := range rows {
		if _, seen := out[r.ChannelType]; !seen {
			out[r.ChannelType] = r.ID
		}
	}
	return out, nil
}

// DeploymentAgent returns the agent of a deployment, for the embed route.
func (q *queries) DeploymentAgent(ctx context.Context, deploymentID uuid.UUID) (uuid.UUID, uuid.UUID, error) {
	r, err := q.sql.DeploymentAgent(ctx, q.db, deploymentID)
	return r.WorkspaceID, r.AgentID, notFound("deployment", err)
}

// PublicDeployment is a deployment as a public channel route (the webchat widget) sees it.
type PublicDeployment struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	AgentID     uuid.UUID
	ChannelType string
	Config      json.RawMessage
	// The workspace's state and credit, for its budget rules.
	WorkspaceName   string
	WorkspaceStatus string
	BalanceNanoUSD  int64
}

// DeploymentByID returns a deployment by its id alone, for the public webchat routes (the
// id is in the embed line; the workspace comes from the row).
func (q *queries) DeploymentByID(ctx context.Context, id uuid.UUID) (PublicDeployment, error) {
	r, err := q.sql.DeploymentByID(ctx, q.db, id)
	return PublicDeployment{ID: id, WorkspaceID: r.WorkspaceID, AgentID: r.AgentID, ChannelType: r.ChannelType, Config: r.Config,
			WorkspaceName: r.WorkspaceName, WorkspaceStatus: r.WorkspaceStatus, BalanceNanoUSD: r.BalanceNanoUSD},
		notFound("deployment", err)
}
