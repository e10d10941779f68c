package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/llm"
	"switchboard/money"
	"switchboard/shortid"
	"switchboard/store"
)

// commit writes the turn: conversation and messages (persisted turns), the surface's record,
// then the charge and the events, in one transaction. The charge and events go last: they
// lock the workspace row until commit (store.Tx.Settle). With a group committer
// (NewGroupCommit), the turn's writes join a batch of other turns' in one transaction; either
// way commit returns only once the turn is durable.
func (p *Pipeline) commit(ctx context.Context, t Turn, out *Outcome, produced []llm.Message, tk *ticket) error {
	out.CostNanoUSD = out.Model.CostNanoUSD(out.Usage.InputTokens, out.Usage.OutputTokens)
	if p.writeBehind != nil && !t.Persist && t.Record == nil && len(out.Parked) == 0 {
		// An ephemeral turn stores nothing but its spend: it answers now, its spend joins the
		// next batch (WriteBehind).
		d := &deferredSpend{workspaceID: t.WorkspaceID, out: *out, events: []store.NewEvent{completedEvent(t, out)}}
		if p.writeBehind.add(d) {
			return nil
		}
	}
	u := newCommitUnit(t, out, produced)
	err := p.commitUnit(ctx, u, tk)
	if err == nil || t.OutlastOutage <= 0 {
		return err
	}
	deadline := time.Now().Add(t.OutlastOutage)
	for wait := 100 * time.Millisecond; err != nil && store.Unavailable(err) && time.Now().Before(deadline); wait = min(2*wait, 2*time.Second) {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = p.commitUnit(ctx, u, tk) // the same unit: writeMany starts it afresh
	}
	return err
}

// commitUnit commits u once: in a batch of the group committer, or in a transaction of its
// own.
func (p *Pipeline) commitUnit(ctx context.Context, u *commitUnit, tk *ticket) error {
	t, out := u.t, u.out
	if p.groupCommit != nil && p.groupCommit.add(u, tk) {
		// The batch runs detached from ctx: a client gone meanwhile does not undo the commit,
		// and the turn must not be metered again as if it had failed.
		<-u.done
		return u.err
	}
	tk.end()
	return p.store.InTx(ctx, func(tx *store.Tx) error {
		if err := writeMany(ctx, tx, []*commitUnit{u}); err != nil {
			return err
		}
		if t.Also == nil {
			return p.settle(ctx, tx, t.WorkspaceID, out, u.events, u.recorded)
		}
		items, err := u.settlements(ctx, tx)
		if err != nil {
			return err
		}
		return tx.SettleMany(ctx, t.WorkspaceID, items)
	})
}

// commitUnit is what a turn commits: written by Pipeline.commit in a transaction of its own,
// or by the group committer in a batch with others.
type commitUnit struct {
	t        Turn
	out      *Outcome
	produced []llm.Message
	// conversation and newConversation are out's before the first attempt: writeMany restores
	// them, so a unit written again after its batch rolled back starts afresh.
	conversation    *store.Conversation
	newConversation bool

	events, recorded []store.NewEvent // set by writeMany: the turn's events, then the record's

	err  error         // the outcome, once done is closed (group commit)
	done chan struct{} // closed when the unit's batch committed or failed
}

func newCommitUnit(t Turn, out *Outcome, produced []llm.Message) *commitUnit {
	return &commitUnit{t: t, out: out, produced: produced, conversation: out.Conversation, newConversation: out.NewConversation}
}

// writeRecord writes the surface's record of the turn; a background response finished first
// by another run refuses the commit (supersededError).
func writeRecord(ctx context.Context, tx *store.Tx, t Turn, rec store.TurnRecord) error {
	if err := tx.WriteTurnRecord(ctx, t.WorkspaceID, rec); err != nil {
		if rec.Finish && errors.Is(err, store.ErrNotFound) {
			return supersededError{err}
		}
		return err
	}
	return nil
}

// settlement is what Pipeline.settle writes for the unit, for Tx.SettleMany: the charge, the
// turn's events, spend.recorded with the balance after this charge, then the record's events.
func (u *commitUnit) settlement() store.Settlement {
	charge := chargeOf(u.out)
	all := append([]store.NewEvent(nil), u.events...)
	if charge != nil {
		all = append(all, spendAfterCharge(u.out))
	}
	return store.Settlement{Charge: charge, Events: append(all, u.recorded...)}
}

// settlements are what the unit settles: its own settlement, then those of the caller's
// writes (Turn.Also), which run here, after the unit's messages are written.
func (u *commitUnit) settlements(ctx context.Context, tx *store.Tx) ([]store.Settlement, error) {
	own := u.settlement()
	if u.t.Also == nil {
		return []store.Settlement{own}, nil
	}
	more, err := u.t.Also(ctx, tx, u.out)
	if err != nil {
		return nil, err
	}
	return append([]store.Settlement{own}, more...), nil
}

// completedEvent is the turn.completed event of a turn.
func completedEvent(t Turn, out *Outcome) store.NewEvent {
	completed := turnCompletedData{ConversationID: conversationRef(out), Surface: t.Surface, ReplyPreview: preview(out.Text),
		FinishReason: string(out.Finish), Model: out.Model.ID}
	if t.AgentID != nil {
		completed.AgentID = t.AgentID.String()
	}
	return store.NewEvent{Type: "turn.completed", Data: completed}
}

// The events' data of a turn are structs, not maps: encoding/json writes a struct without
// sorting its keys or boxing its values (two turn events: 4.5 µs and 22 allocations less;
// issue 17). Their fields are in the order encoding/json wrote the maps' keys (sorted), so
// the envelopes are the bytes they were (TestEventDataEncodesAsTheMapsDid).

// turnCompletedData is turn.completed's data. conversation_id is null for an ephemeral turn.
type turnCompletedData struct {
	AgentID        string  `json:"agent_id,omitempty"`
	ConversationID *string `json:"conversation_id"`
	FinishReason   string  `json:"finish_reason"`
	Model          string  `json:"model"`
	ReplyPreview   string  `json:"reply_preview"`
	Surface        string  `json:"surface"`
}

// spendData is spend.recorded's data for a model turn.
type spendData struct {
	AmountUSD      json.Number `json:"amount_usd"`
	BalanceUSD     json.Number `json:"balance_usd"`
	Category       string      `json:"category"`
	ConversationID *string     `json:"conversation_id,omitempty"`
}

// conversationCreatedData is conversation.created's data.
type conversationCreatedData struct {
	Channel        string `json:"channel"`
	ConversationID string `json:"conversation_id"`
}

// supersededError is a commit refused because the background response the turn finishes
// was finished first, by another run of its job or by the sweep (store.Tx.FinishResponse).
type supersededError struct{ err error }

func (e supersededError) Error() string { return e.err.Error() }
func (e supersededError) Unwrap() error { return e.err }

// newConversationID is the short id of the conversation a turn opens.
func newConversationID(t Turn) string {
	if t.NewConversationID != "" {
		return t.NewConversationID
	}
	return shortid.New(shortid.Conversation)
}

func createdEvent(conv store.Conversation) store.NewEvent {
	return store.NewEvent{Type: "conversation.created", Data: conversationCreatedData{Channel: conv.Channel, ConversationID: conv.ShortID}}
}

// park stores the actions the turn parked, in its conversation, and returns their events.
func park(ctx context.Context, tx *store.Tx, t Turn, out *Outcome) ([]store.NewEvent, error) {
	var events []store.NewEvent
	for _, a := range out.Parked {
		a.ConversationID = out.Conversation.ID
		if err := tx.ParkAction(ctx, t.WorkspaceID, a); err != nil {
			return nil, err
		}
		events = append(events, requestedEvent(a, out.Conversation.ShortID))
	}
	return events, nil
}

// turnMessages is what a persisted turn appends to its conversation: the client's seed
// messages, the user's text, then what the turn produced.
func turnMessages(t Turn, produced []llm.Message) []llm.Message {
	turn := make([]llm.Message, 0, len(t.Seed)+1+len(produced))
	return append(append(append(turn, t.Seed...), llm.Message{Role: llm.RoleUser, Text: t.Text}), produced...)
}

// settle charges the turn's cost (if it used anything) and appends its events, with
// spend.recorded carrying the balance after the charge, before the recorded events.
func (p *Pipeline) settle(ctx context.Context, tx *store.Tx, workspaceID uuid.UUID, out *Outcome, events, after []store.NewEvent) error {
	charge := chargeOf(out)
	_, _, err := tx.Settle(ctx, workspaceID, charge, func(balance int64) []store.NewEvent {
		all := append([]store.NewEvent(nil), events...)
		if charge != nil {
			all = append(all, spendEvent(out, balance))
		}
		return append(all, after...)
	})
	return err
}

// chargeOf is the charge of what the turn used; nil when it used nothing.
func chargeOf(out *Outcome) *store.Charge {
	if out.Usage.InputTokens == 0 && out.Usage.OutputTokens == 0 {
		return nil
	}
	charge := &store.Charge{AmountNanoUSD: out.CostNanoUSD, Category: "model_usage", Model: out.Model.ID,
		InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}
	if out.Conversation != nil {
		charge.ConversationID = &out.Conversation.ID
	}
	return charge
}

func spendEvent(out *Outcome, balance int64) store.NewEvent {
	return store.NewEvent{Type: "spend.recorded", Data: spendData{AmountUSD: json.Number(money.FormatUSD(out.CostNanoUSD)),
		BalanceUSD: json.Number(money.FormatUSD(balance)), Category: "model_usage", ConversationID: conversationRef(out)}}
}

// spendAfterCharge is spendEvent with the balance left for Tx.SettleMany to write in, which
// knows it only once the database has taken the workspace's lock: the same bytes once it has.
func spendAfterCharge(out *Outcome) store.NewEvent {
	b, _ := json.Marshal(spendData{AmountUSD: json.Number(money.FormatUSD(out.CostNanoUSD)), BalanceUSD: "0",
		Category: "model_usage", ConversationID: conversationRef(out)})
	// The data begins {"amount_usd":<digits>,"balance_usd":0, so this is the first match.
	const member = `"balance_usd":`
	head, tail, _ := strings.Cut(string(b), member+"0")
	return store.NewEvent{Type: "spend.recorded", Data: store.AfterCharge{Head: head + member, Tail: tail}}
}

// meter charges what a turn used, in a transaction of its own, when the turn itself is not
// committed: the vendor failed midway, or the commit after its answer failed. The charge
// names the conversation the turn continued, if it still exists (a conversation the turn
// opened was rolled back with it).
func (p *Pipeline) meter(ctx context.Context, t Turn, out *Outcome) {
	if out.Usage.InputTokens == 0 && out.Usage.OutputTokens == 0 {
		return
	}
	out.CostNanoUSD = out.Model.CostNanoUSD(out.Usage.InputTokens, out.Usage.OutputTokens)
	out.Conversation, out.NewConversation = t.Conversation, false
	// The request may have been cancelled; the charge must be written all the same.
	mctx := context.WithoutCancel(ctx)
	settle := func() error {
		return p.store.InTx(mctx, func(tx *store.Tx) error { return p.settle(mctx, tx, t.WorkspaceID, out, nil, nil) })
	}
	err := settle()
	if err != nil && out.Conversation != nil {
		// The conversation may be what failed the commit (deleted meanwhile): charge
		// without it rather than not at all.
		out.Conversation = nil
		err = settle()
	}
	if err != nil {
		p.log.ErrorContext(ctx, "metering a turn that was not committed", slog.String("error", err.Error()),
			slog.String("workspace_id", t.WorkspaceID.String()), slog.Int64("cost_nano_usd", out.CostNanoUSD))
	}
}

// conversationRef is the short id of the turn's conversation; nil for an ephemeral turn.
func conversationRef(out *Outcome) *string {
	if out.Conversation == nil {
		return nil
	}
	return &out.Conversation.ShortID
}

// preview is the start of a reply, for events: at most 200 characters.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= 200 {
		return s // the usual reply: no copy
	}
	return string([]rune(s)[:199]) + "…"
}
