package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/secrets"
	"switchboard/store/internal/dbsqlc"
)

// Channel is a connected channel (a phone number, a messaging account, a webchat site).
type Channel struct {
	ID           uuid.UUID
	WorkspaceID  uuid.UUID
	Provider     string
	Name         string
	Config       json.RawMessage // the settings, secrets replaced by hints
	InboundAgent *uuid.UUID      // the agent holding the inbound seat, if any
	CreatedAt    time.Time
	UpdatedAt    time.Time
	Status       string  // ChannelConnected or ChannelNeedsSetup
	Setup        *string // what is missing, when it needs setup
	InboundToken string  // the secret part of its inbound URL
	Address      *string // its own address: an SMS channel's E.164 number
	Secrets      *secrets.Sealed
	LastInbound  *time.Time
}

// ErrChannelNotConnected refuses a deployment to a channel that cannot carry traffic.
var ErrChannelNotConnected = errors.New("channel not connected")

// Channel statuses.
const (
	ChannelConnected  = "connected"
	ChannelNeedsSetup = "needs_setup"
)

// channelRow is the columns every channel query selects.
type channelRow = dbsqlc.ChannelByIDRow

func toChannel(c channelRow) Channel {
	out := Channel{ID: c.ID, WorkspaceID: c.WorkspaceID, Provider: c.Provider, Name: c.Name, Config: c.Config,
		InboundAgent: c.InboundAgent, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Status: c.Status, Setup: c.Setup,
		InboundToken: c.InboundToken, Address: c.Address}
	if t, ok := c.LastInboundAt.(time.Time); ok { // max() of no rows is NULL
		out.LastInbound = &t
	}
	if c.Secrets != nil && c.SecretsKeyID != nil {
		out.Secrets = &secrets.Sealed{Ciphertext: c.Secrets, KeyID: *c.SecretsKeyID}
	}
	return out
}

// ChannelWrite is what is stored of a channel when it is connected or changed.
type ChannelWrite struct {
	ID           uuid.UUID // chosen before, so that its secrets can be bound to it
	Provider     string
	Name         string
	Config       json.RawMessage
	Status       string
	Setup        *string
	InboundToken string
	Address      *string
	Secrets      *secrets.Sealed
}

func sealedColumns(s *secrets.Sealed) ([]byte, *string) {
	if s == nil {
		return nil, nil
	}
	return s.Ciphertext, &s.KeyID
}

// NewChannelID is the id of a channel about to be created.
func NewChannelID() uuid.UUID { return newRowID() }

// CreateChannel stores a channel; ErrExists when its address is another channel's.
func (q *queries) CreateChannel(ctx context.Context, workspaceID uuid.UUID, c ChannelWrite) (Channel, error) {
	sealed, keyID := sealedColumns(c.Secrets)
	id, err := q.sql.CreateChannel(ctx, q.db, dbsqlc.CreateChannelParams{ID: c.ID, WorkspaceID: workspaceID, Provider: c.Provider, Name: c.Name,
		Config: c.Config, Status: c.Status, Setup: c.Setup, InboundToken: c.InboundToken, Address: c.Address, Secrets: sealed, SecretsKeyID: keyID})
	if isUniqueViolation(err) {
		return Channel{}, ErrExists
	}
	if err != nil {
		return Channel{}, err
	}
	return q.ChannelByID(ctx, workspaceID, id)
}

// UpdateChannel replaces a channel's settings; ErrExists when its new address is another
// channel's.
func (q *queries) UpdateChannel(ctx context.Context, workspaceID uuid.UUID, c ChannelWrite) (Channel, error) {
	sealed, keyID := sealedColumns(c.Secrets)
	err := q.sql.UpdateChannel(ctx, q.db, dbsqlc.UpdateChannelParams{WorkspaceID: workspaceID, ID: c.ID, Name: c.Name, Config: c.Config,
		Status: c.Status, Setup: c.Setup, Address: c.Address, Secrets: sealed, SecretsKeyID: keyID})
	if isUniqueViolation(err) {
		return Channel{}, ErrExists
	}
	if err != nil {
		return Channel{}, err
	}
	return q.ChannelByID(ctx, workspaceID, c.ID)
}

// DeleteChannel removes a channel and its deployments.
func (q *queries) DeleteChannel(ctx context.Context, workspaceID, id uuid.UUID) error {
	n, err := q.sql.DeleteChannel(ctx, q.db, dbsqlc.DeleteChannelParams{WorkspaceID: workspaceID, ID: id})
	return affected("channel", n, err)
}

// ChannelByID returns a channel of the workspace.
func (q *queries) ChannelByID(ctx context.Context, workspaceID, id uuid.UUID) (Channel, error) {
	c, err := q.sql.ChannelByID(ctx, q.db, dbsqlc.ChannelByIDParams{WorkspaceID: workspaceID, ID: id})
	return toChannel(c), notFound("channel", err)
}

// ChannelByToken returns the channel an inbound URL names, whatever its workspace.
func (q *queries) ChannelByToken(ctx context.Context, provider, token string) (Channel, error) {
	c, err := q.sql.ChannelByToken(ctx, q.db, dbsqlc.ChannelByTokenParams{Provider: provider, InboundToken: token})
	return toChannel(channelRow(c)), notFound("channel", err)
}

// ListChannels lists the workspace's channels (of one provider when it is not empty),
// newest first.
func (q *queries) ListChannels(ctx context.Context, workspaceID uuid.UUID, provider string) ([]Channel, error) {
	var p *string
	if provider != "" {
		p = &provider
	}
	rows, err := q.sql.ListChannels(ctx, q.db, dbsqlc.ListChannelsParams{WorkspaceID: workspaceID, Provider: p})
	return mapRows(rows, func(r dbsqlc.ListChannelsRow) Channel { return toChannel(channelRow(r)) }), err
}

// ConnectedChannels counts the workspace's connected channels of a provider.
func (q *queries) ConnectedChannels(ctx context.Context, workspaceID uuid.UUID, provider string) (int64, error) {
	return q.sql.CountConnectedChannels(ctx, q.db, dbsqlc.CountConnectedChannelsParams{WorkspaceID: workspaceID, Provider: provider})
}

// NumberOwner says whether the workspace bought the number (its carrier id, "" when it did
// not) and whether another workspace did.
func (q *queries) NumberOwner(ctx context.Context, workspaceID uuid.UUID, e164 string) (sid string, elsewhere bool, err error) {
	sid, err = q.sql.NumberBought(ctx, q.db, dbsqlc.NumberBoughtParams{WorkspaceID: workspaceID, E164: e164})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return "", false, err
	}
	elsewhere, err = q.sql.NumberTakenElsewhere(ctx, q.db, dbsqlc.NumberTakenElsewhereParams{WorkspaceID: workspaceID, E164: e164})
	return sid, elsewhere, err
}

// InboundSeat is a connected channel whose inbound seat an agent holds.
type InboundSeat struct {
	ChannelID uuid.UUID
	Provider  string
	Name      string
}

// AgentInboundSeats lists the connected channels whose inbound traffic the agent answers.
func (q *queries) AgentInboundSeats(ctx context.Context, workspaceID, agentID uuid.UUID) ([]InboundSeat, error) {
	rows, err := q.sql.AgentInboundSeats(ctx, q.db, dbsqlc.AgentInboundSeatsParams{WorkspaceID: workspaceID, AgentID: agentID})
	return mapRows(rows, func(r dbsqlc.AgentInboundSeatsRow) InboundSeat {
		return InboundSeat{ChannelID: r.ID, Provider: r.Provider, Name: r.Name}
	}), err
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
	// ChannelStatus is the channel's status as the deploy locked it (connected or
	// needs_setup); empty for a deployment by type.
	ChannelStatus string
	Inbound       bool
	Replaced      *uuid.UUID // the agent that lost the inbound seat
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
	out.ChannelType, out.ChannelName, out.ChannelStatus = ch.Provider, ch.Name, ch.Status
	if ch.Status != ChannelConnected {
		return out, ErrChannelNotConnected
	}
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
