package converse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// agentCache keeps the agents of recent turns in memory, their blueprints decoded, each with
// its row's version (store.AgentByIDVersioned: the row's xmin, which every change of the row
// changes), so that a turn continuing a conversation reads no agent row and decodes no
// blueprint.
//
// Why a copy cannot outlive a change, on any replica: a turn uses a copy only when it
// continues a conversation, whose state it reads in one statement with the version of the
// agent's row as it is now (store.AgentTurnState), before anything is written or decided.
// When that version is not the copy's (the agent was updated, disabled or deleted, by this
// replica or another) or the statement fails, the copy is dropped and the turn starts again
// from a fresh read of the row (Service.Chat). No announcement is needed, and none can be
// missed. A turn that opens a conversation always reads the row: it writes the opening before
// any statement could check a copy.
//
// Only enabled agents are kept, so that a refusal (agent_disabled) always comes from a fresh
// read.
type agentCache struct {
	mu sync.RWMutex
	m  map[uuid.UUID]cachedAgent
}

type cachedAgent struct {
	agent   store.Agent
	bp      blueprint.Blueprint
	version int64
}

// agentCacheMax bounds the cache; past it, it starts again empty (agents in use come back
// with one read each).
const agentCacheMax = 10_000

// errStaleAgent: the copy of the agent a turn used is not the row's current version.
var errStaleAgent = errors.New("converse: the agent changed")

func (c *agentCache) get(ws, id uuid.UUID) (cachedAgent, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[id]
	return e, ok && e.agent.WorkspaceID == ws
}

func (c *agentCache) put(e cachedAgent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= agentCacheMax {
		c.m = map[uuid.UUID]cachedAgent{}
	}
	c.m[e.agent.ID] = e
}

func (c *agentCache) forget(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// turnAgent is the agent answering req, enabled, with its decoded blueprint. version is not 0
// when they are a kept copy (agentCache), which the conversation's read must confirm:
// cached is true when a copy may be used (a continued conversation, no copy found stale yet).
func (s *Service) turnAgent(ctx context.Context, req Request, cached bool) (a store.Agent, bp blueprint.Blueprint, version int64, err error) {
	switch {
	case req.Agent != nil && req.Agent.ID == req.AgentID && req.Agent.WorkspaceID == req.WorkspaceID:
		a = *req.Agent
	case cached && req.ConversationID != "":
		if e, ok := s.agents.get(req.WorkspaceID, req.AgentID); ok {
			return e.agent, e.bp, e.version, nil
		}
		fallthrough
	default:
		if a, version, err = s.store.AgentByIDVersioned(ctx, req.WorkspaceID, req.AgentID); err != nil {
			return a, bp, 0, apierr.WithParam(err, "id")
		}
	}
	if a.Status != string(manage.AgentEnabled) {
		return a, bp, 0, apierr.Conflict("agent_disabled", "The agent %q is disabled, so it does not reply. Enable it with update_agent (status: enabled).", a.Name)
	}
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return a, bp, 0, fmt.Errorf("stored blueprint of agent %s: %w", a.ID, err)
	}
	if version != 0 {
		s.agents.put(cachedAgent{agent: a, bp: bp, version: version})
	}
	return a, bp, 0, nil // read now: nothing to confirm
}
