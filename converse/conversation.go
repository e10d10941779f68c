package converse

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/llm"
	"switchboard/manage"
	"switchboard/store"
)

// conversation continues the requested conversation of the agent, or opens one: the greeting
// is its first message, then the disclosure when it applies, with conversation.created. When
// opened is not nil, conversation.created is not settled here but left in *opened, for the
// transaction of the turn (which takes the workspace row's lock anyway): the opening then
// holds no lock on the workspace through its commit.
//
// The conversation's state and its history window of window bytes (agent.HistoryWindow) are
// read in one statement (store.AgentTurnState), the window for the model turn, if any, with
// the plan of the search before the model call when the agent makes one (prefetchSearch).
//
// version, when not 0, is the version of a kept copy of the agent (agentCache), which the
// continued conversation's read confirms before anything else: otherwise errStaleAgent.
func (s *Service) conversation(ctx context.Context, a store.Agent, bp *blueprint.Blueprint, req Request, opened *[]store.NewEvent, window, version int64) (turnState, error) {
	contact := storeContact(req.Contact)
	search := "" // the search before the model call is planned with the read
	if prefetchSearch(&bp.Agent) {
		search = req.Message
	}
	// read reads the conversation ref names with its window, decoded (historyCache).
	read := func(ref string) (store.AgentTurn, []llm.Message, error) {
		r := store.TurnRead{Ref: ref, MaxMessages: agent.HistoryMaxMessages, MaxBytes: window, Search: search}
		r.KnownFrom, r.KnownTo = s.history.known(a.WorkspaceID, ref)
		for {
			st, err := s.store.AgentTurnState(ctx, a.WorkspaceID, r)
			if err != nil {
				return st, nil, err
			}
			msgs, ok, err := s.history.window(a.WorkspaceID, ref, st)
			if ok || err != nil || r.KnownTo == 0 {
				return st, msgs, err
			}
			r.KnownFrom, r.KnownTo = 0, 0 // a kept message is stale: read them all
		}
	}
	state := func(st store.AgentTurn, msgs []llm.Message) turnState {
		return turnState{conv: st.Conversation, history: &agent.History{MaxBytes: window, Messages: msgs}, search: st.Search}
	}
	if req.ConversationID != "" {
		ref := req.ConversationID
		if req.Conversation != nil {
			ref = req.Conversation.String()
		}
		st, msgs, err := read(ref)
		conv := st.Conversation
		if version != 0 && (err != nil || st.AgentVersion != version || conv.AgentID == nil || *conv.AgentID != a.ID) {
			return turnState{}, errStaleAgent // decided again on a fresh read of the agent
		}
		if err != nil {
			return turnState{}, apierr.WithParam(err, "conversation_id")
		}
		if conv.AgentID == nil || *conv.AgentID != a.ID {
			return turnState{}, apierr.NotFound("conversation_id", "conversation_not_found", "This agent has no conversation %q.", req.ConversationID)
		}
		if contact != nil {
			err := s.store.InTx(ctx, func(tx *store.Tx) error { return mergeContact(ctx, tx, a.WorkspaceID, &st.Conversation, *contact) })
			if err != nil {
				return turnState{}, err
			}
		}
		return state(st, msgs), nil
	}
	deployed, err := s.store.AgentDeployments(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return turnState{}, err
	}
	channel := req.Channel
	if channel == "" {
		channel = "api"
	}
	disclosure := manage.DisclosureFor(a, bp, deployed, channel)
	var msgs []store.Message
	if !req.SkipGreeting {
		msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: bp.Agent.Persona.Greeting})
	}
	var disclosedAt *time.Time
	if disclosure.Applies {
		now := s.now()
		disclosedAt = &now
		msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: disclosure.SpokenText})
	}
	var id uuid.UUID
	var created []store.NewEvent
	// open writes the conversation, its agent, contact and first messages in one statement,
	// and leaves its conversation.created in created.
	open := func(q opener, contactID *uuid.UUID) error {
		conv, err := q.OpenAgentConversationWith(ctx, a.WorkspaceID, channel, a.ID, contactID, disclosedAt, msgs)
		if err != nil {
			return err
		}
		id = conv.ID
		data := map[string]any{"conversation_id": conv.ShortID, "channel": conv.Channel, "agent_id": a.ID.String()}
		if contactID != nil {
			data["contact_id"] = contactID.String()
		}
		created = []store.NewEvent{{Type: "conversation.created", Data: data}}
		return nil
	}
	if opened != nil && contact == nil && req.Thread == nil {
		// A single statement, atomic on its own: no transaction to begin and commit.
		err = open(s.store, req.ContactID)
	} else {
		err = s.store.InTx(ctx, func(tx *store.Tx) error {
			contactID := req.ContactID
			switch {
			case contactID != nil && contact != nil:
				if err := tx.MergeContact(ctx, a.WorkspaceID, *contactID, *contact); err != nil {
					return err
				}
			case contact != nil:
				cid, err := tx.CreateContact(ctx, a.WorkspaceID, *contact)
				if err != nil {
					return err
				}
				contactID = &cid
			}
			if err := open(tx, contactID); err != nil {
				return err
			}
			if req.Thread != nil {
				if err := tx.AddThread(ctx, a.WorkspaceID, id, req.Thread.ChannelID, req.Thread.Remote); err != nil {
					return err
				}
			}
			if opened != nil {
				return nil
			}
			_, _, err := tx.Settle(ctx, a.WorkspaceID, nil, func(int64) []store.NewEvent { return created })
			return err
		})
	}
	if err != nil {
		return turnState{}, err
	}
	if opened != nil {
		*opened = created
	}
	st, history, err := read(id.String())
	return state(st, history), err
}

// opener opens an agent's conversation: the store, or a transaction of it.
type opener interface {
	OpenAgentConversationWith(ctx context.Context, workspaceID uuid.UUID, channel string, agentID uuid.UUID, contactID *uuid.UUID, disclosedAt *time.Time, msgs []store.Message) (store.Conversation, error)
}

func storeContact(c *Contact) *store.Contact {
	if c == nil {
		return nil
	}
	out := store.Contact{Name: nonEmpty(c.Name), Email: nonEmpty(c.Email), Phone: nonEmpty(c.Phone)}
	if out.Empty() {
		return nil
	}
	return &out
}

func nonEmpty(s string) *string {
	if s = strings.TrimSpace(s); s == "" {
		return nil
	}
	return &s
}

// mergeContact fills in the conversation's contact, creating it when it has none.
func mergeContact(ctx context.Context, tx *store.Tx, ws uuid.UUID, conv *store.AgentConversation, c store.Contact) error {
	if conv.ContactID == nil {
		id, err := tx.CreateContact(ctx, ws, c)
		if err != nil {
			return err
		}
		conv.ContactID = &id
		if err := tx.SetConversationContact(ctx, ws, conv.ID, id); err != nil {
			return err
		}
	} else if err := tx.MergeContact(ctx, ws, *conv.ContactID, c); err != nil {
		return err
	}
	merge := func(dst **string, src *string) {
		if src != nil {
			*dst = src
		}
	}
	merge(&conv.Contact.Name, c.Name)
	merge(&conv.Contact.Email, c.Email)
	merge(&conv.Contact.Phone, c.Phone)
	return nil
}

// flowOf is the conversation's state as a turn starts.
func flowOf(c store.AgentConversation) store.ConversationFlow {
	return store.ConversationFlow{Status: c.Status, EscalationTrigger: c.EscalationTrigger, EscalationAction: c.EscalationAction,
		EscalatedAt: c.EscalatedAt, FailedAttempts: c.FailedAttempts, AwaitingContact: c.AwaitingContact,
		PickupTimedOutAt: c.PickupTimedOutAt}
}
