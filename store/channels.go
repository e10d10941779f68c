package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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

const channelColumns = `c.id, c.workspace_id, c.provider, c.name, c.config, d.agent_id, c.created_at`
const channelFrom = ` FROM channels c LEFT JOIN deployments d ON d.channel_id = c.id AND d.inbound `

func scanChannel(row interface{ Scan(...any) error }) (Channel, error) {
	var c Channel
	var cfg []byte
	err := row.Scan(&c.ID, &c.WorkspaceID, &c.Provider, &c.Name, &cfg, &c.InboundAgent, &c.CreatedAt)
	c.Config = cfg
	return c, notFound(err)
}

// CreateChannel stores a channel.
func (s *Store) CreateChannel(ctx context.Context, workspaceID uuid.UUID, provider, name string, config json.RawMessage) (Channel, error) {
	var id uuid.UUID
	if err := s.pool.QueryRow(ctx, `INSERT INTO channels (workspace_id, provider, name, config) VALUES ($1, $2, $3, $4) RETURNING id`,
		workspaceID, provider, name, string(config)).Scan(&id); err != nil {
		return Channel{}, err
	}
	return s.ChannelByID(ctx, workspaceID, id)
}

// ChannelByID returns a channel of the workspace.
func (s *Store) ChannelByID(ctx context.Context, workspaceID, id uuid.UUID) (Channel, error) {
	return scanChannel(s.pool.QueryRow(ctx, `SELECT `+channelColumns+channelFrom+`WHERE c.workspace_id = $1 AND c.id = $2`, workspaceID, id))
}

// ListChannels lists the workspace's channels, newest first.
func (s *Store) ListChannels(ctx context.Context, workspaceID uuid.UUID) ([]Channel, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+channelColumns+channelFrom+`WHERE c.workspace_id = $1 ORDER BY c.created_at DESC, c.id`, workspaceID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Channel, error) { return scanChannel(r) })
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
func (s *Store) DeployAgent(ctx context.Context, workspaceID uuid.UUID, d Deploy) (Deployment, error) {
	var out Deployment
	err := s.InTx(ctx, func(t *Tx) error {
		out = Deployment{ChannelType: d.ChannelType}
		if d.ChannelID == nil {
			return t.tx.QueryRow(ctx,
				`INSERT INTO deployments (workspace_id, agent_id, channel_type, config) VALUES ($1, $2, $3, $4) RETURNING id`,
				workspaceID, d.AgentID, d.ChannelType, string(d.Config)).Scan(&out.ID)
		}
		if err := t.tx.QueryRow(ctx, `SELECT provider, name FROM channels WHERE workspace_id = $1 AND id = $2 FOR UPDATE`,
			workspaceID, *d.ChannelID).Scan(&out.ChannelType, &out.ChannelName); err != nil {
			return notFound(err)
		}
		var holder *uuid.UUID
		err := t.tx.QueryRow(ctx, `SELECT agent_id FROM deployments WHERE channel_id = $1 AND inbound`, *d.ChannelID).Scan(&holder)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		switch {
		case holder == nil, *holder == d.AgentID:
			out.Inbound = true
		case d.TakeOver:
			if _, err := t.tx.Exec(ctx, `UPDATE deployments SET inbound = false, updated_at = now() WHERE channel_id = $1 AND inbound`, *d.ChannelID); err != nil {
				return err
			}
			out.Inbound, out.Replaced = true, holder
		}
		return t.tx.QueryRow(ctx,
			`INSERT INTO deployments (workspace_id, agent_id, channel_type, channel_id, inbound, config) VALUES ($1, $2, $3, $4, $5, $6)
			 ON CONFLICT (agent_id, channel_id) WHERE channel_id IS NOT NULL
			 DO UPDATE SET inbound = excluded.inbound OR deployments.inbound, config = excluded.config, updated_at = now()
			 RETURNING id, inbound`,
			workspaceID, d.AgentID, out.ChannelType, *d.ChannelID, out.Inbound, string(d.Config)).Scan(&out.ID, &out.Inbound)
	})
	return out, err
}

// AgentDeployments lists the channel types an agent is deployed to, with each deployment id.
func (s *Store) AgentDeployments(ctx context.Context, workspaceID, agentID uuid.UUID) (map[string]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT channel_type, id FROM deployments WHERE workspace_id = $1 AND agent_id = $2 ORDER BY created_at`,
		workspaceID, agentID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]uuid.UUID{}
	for rows.Next() {
		var typ string
		var id uuid.UUID
		if err := rows.Scan(&typ, &id); err != nil {
			return nil, err
		}
		if _, seen := out[typ]; !seen {
			out[typ] = id
		}
	}
	return out, rows.Err()
}

// DeploymentAgent returns the agent of a deployment, for the embed route.
func (s *Store) DeploymentAgent(ctx context.Context, deploymentID uuid.UUID) (uuid.UUID, uuid.UUID, error) {
	var ws, agent uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT workspace_id, agent_id FROM deployments WHERE id = $1`, deploymentID).Scan(&ws, &agent)
	return ws, agent, notFound(err)
}
