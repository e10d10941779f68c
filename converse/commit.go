package converse

import (
	"time"

	"switchboard/llm"
	"switchboard/store"
)

// commit stores a turn the rules answered: the message, the reply (none when the agent stays
// silent), the contact and the conversation's state, the notification job, turn.completed
// and the caller's writes (Request.Commit), in one transaction. Nothing is charged for the
// turn: no model was called.
func (s *Service) commit(tc turnContext, req Request, out *outcome) error {
	ctx, ws := tc.ctx, tc.agent.WorkspaceID
	conv := tc.conv
	msgs := []store.Message{{Role: string(llm.RoleUser), Content: req.Message}}
	if out.reply != "" {
		msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: out.reply})
	}
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := mergeOutcomeContact(tc, tx, &conv, out); err != nil {
			return err
		}
		if err := tx.AppendMessages(ctx, ws, conv.ID, msgs); err != nil {
			return err
		}
		items, err := s.settleOutcome(tc, tx, &conv, out, true)
		if err != nil {
			return err
		}
		if req.Commit != nil {
			more, err := req.Commit(ctx, tx, Committed{ConversationID: conv.ID, ShortID: conv.ShortID, Reply: out.reply})
			if err != nil {
				return err
			}
			items = append(items, more...)
		}
		return tx.SettleMany(ctx, ws, items)
	})
}

// mergeOutcomeContact writes the contact details an outcome collected into the conversation's
// contact. It comes first in its transaction, before the conversation's row is locked by the
// turn's append: an erasure of the contact locks the contact, then its conversations, and a
// turn locking them the other way round could each hold what the other waited for, until
// PostgreSQL aborted one (TestContactDetailsAndAnErasureOfTheContactWaitForEachOther).
func mergeOutcomeContact(tc turnContext, tx *store.Tx, conv *store.AgentConversation, out *outcome) error {
	if out.contact == nil {
		return nil
	}
	return mergeContact(tc.ctx, tx, tc.agent.WorkspaceID, conv, *out.contact)
}

// settleOutcome writes what an outcome changes but its contact (mergeOutcomeContact, first),
// inside tx, and returns its turn.completed (when finish) for the caller to settle, last, with
// the transaction's other settlements: in a group commit (Turn.Also) the batch settles them
// with its workspaces locked in id order, and a workspace settled here, before that, could
// be locked out of order.
func (s *Service) settleOutcome(tc turnContext, tx *store.Tx, conv *store.AgentConversation, out *outcome, finish bool) ([]store.Settlement, error) {
	ctx, ws := tc.ctx, tc.agent.WorkspaceID
	if !sameFlow(out.flow, flowOf(*conv)) {
		if err := tx.SetConversationFlow(ctx, ws, conv.ID, out.flow); err != nil {
			return nil, err
		}
	}
	var summary string
	if out.fired != nil || out.notify != "" {
		var err error
		if summary, err = s.summary(ctx, tx, tc, conv); err != nil {
			return nil, err
		}
	}
	if out.fired != nil {
		if err := tx.SetEscalationSummary(ctx, ws, conv.ID, summary); err != nil {
			return nil, err
		}
	}
	if out.notify != "" {
		args := NotifyArgs{WorkspaceID: ws, To: escalationEmail(tc.bp),
			Subject: out.notify + ": " + tc.agent.Name + ", conversation " + conv.ShortID, Body: summary}
		if tx.Pipelined() {
			return nil, store.ErrNeedsPlainTx // a group-committed turn: committed again alone
		}
		if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), args, nil); err != nil {
			return nil, err
		}
	}
	if !finish {
		return nil, nil
	}
	data := map[string]any{"conversation_id": conv.ShortID, "surface": "agent", "agent_id": tc.agent.ID.String(),
		"reply_preview": preview(out.reply), "finish_reason": string(llm.FinishStop), "model": tc.bp.LLM.Model,
		"handled_by": out.rule, "status": out.flow.Status}
	if out.fired != nil {
		data["escalation"] = map[string]any{"trigger": out.fired.trigger, "action": out.fired.action, "summary": summary}
	}
	events := append(append([]store.NewEvent(nil), tc.opened...), store.NewEvent{Type: "turn.completed", Data: data})
	return []store.Settlement{{Events: events}}, nil
}

func preview(s string) string { return truncate(s, 200) }

// unchanged reports whether a model turn's outcome leaves the conversation as it was: no
// message of its own, no contact, no notification and the same state (writeOutcome would
// write nothing).
func (out *outcome) unchanged(conv store.AgentConversation) bool {
	return out.fired == nil && out.contact == nil && out.notify == "" && sameFlow(out.flow, flowOf(conv))
}

// sameFlow reports whether two states of a conversation are equal, value by value.
func sameFlow(a, b store.ConversationFlow) bool {
	return a.Status == b.Status && a.FailedAttempts == b.FailedAttempts && a.AwaitingContact == b.AwaitingContact &&
		samePtr(a.EscalationTrigger, b.EscalationTrigger) && samePtr(a.EscalationAction, b.EscalationAction) &&
		sameTime(a.EscalatedAt, b.EscalatedAt) && sameTime(a.PickupTimedOutAt, b.PickupTimedOutAt)
}

func samePtr(a, b *string) bool { return a == b || a != nil && b != nil && *a == *b }

func sameTime(a, b *time.Time) bool { return a == b || a != nil && b != nil && a.Equal(*b) }
