package converse

import (
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
		if err := tx.AppendMessages(ctx, ws, conv.ID, msgs); err != nil {
			return err
		}
		if err := s.settleOutcome(tc, tx, &conv, out, true); err != nil || req.Commit == nil {
			return err
		}
		more, err := req.Commit(ctx, tx, Committed{ConversationID: conv.ID, ShortID: conv.ShortID, Reply: out.reply})
		if err != nil || len(more) == 0 {
			return err
		}
		return tx.SettleMany(ctx, ws, more)
	})
}

// settleOutcome writes what an outcome changes, inside tx, and appends its turn.completed.
func (s *Service) settleOutcome(tc turnContext, tx *store.Tx, conv *store.AgentConversation, out *outcome, finish bool) error {
	ctx, ws := tc.ctx, tc.agent.WorkspaceID
	if out.contact != nil {
		if err := mergeContact(ctx, tx, ws, conv, *out.contact); err != nil {
			return err
		}
	}
	if err := tx.SetConversationFlow(ctx, ws, conv.ID, out.flow); err != nil {
		return err
	}
	var summary string
	if out.fired != nil || out.notify != "" {
		var err error
		if summary, err = s.summary(ctx, tx, tc, conv); err != nil {
			return err
		}
	}
	if out.fired != nil {
		if err := tx.SetEscalationSummary(ctx, ws, conv.ID, summary); err != nil {
			return err
		}
	}
	if out.notify != "" {
		args := NotifyArgs{WorkspaceID: ws, To: escalationEmail(tc.bp),
			Subject: out.notify + ": " + tc.agent.Name + ", conversation " + conv.ShortID, Body: summary}
		if tx.Pipelined() {
			return store.ErrNeedsPlainTx // a group-committed turn: committed again alone
		}
		if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), args, nil); err != nil {
			return err
		}
	}
	if !finish {
		return nil
	}
	data := map[string]any{"conversation_id": conv.ShortID, "surface": "agent", "agent_id": tc.agent.ID.String(),
		"reply_preview": preview(out.reply), "finish_reason": string(llm.FinishStop), "model": tc.bp.LLM.Model,
		"handled_by": out.rule, "status": out.flow.Status}
	if out.fired != nil {
		data["escalation"] = map[string]any{"trigger": out.fired.trigger, "action": out.fired.action, "summary": summary}
	}
	_, _, err := tx.Settle(ctx, ws, nil, func(int64) []store.NewEvent {
		return []store.NewEvent{{Type: "turn.completed", Data: data}}
	})
	return err
}

func preview(s string) string { return truncate(s, 200) }
