// Package agent runs agent turns: it assembles the prompt (the service's system prompt, then
// the client's additional instructions), loads history, runs the tool-call loop against a
// model, meters the usage, and commits messages, spend and events in one transaction.
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

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/inputguard"
	"switchboard/llm"
	"switchboard/money"
	"switchboard/shortid"
	"switchboard/store"
)

// Models gives the model client of a vendor family.
type Models interface {
	For(family string) (llm.Client, error)
}

// DefaultMaxSteps bounds the model calls of one turn; the last step offers no tools, so the
// model has to answer in text.
const DefaultMaxSteps = 6

// Pipeline runs turns.
type Pipeline struct {
	store    *store.Store
	catalog  *catalog.Catalog
	models   Models
	tools    *Tools
	log      *slog.Logger
	MaxSteps int
	// ConfirmationTTL is how long a parked action waits for `YES <code>`.
	ConfirmationTTL time.Duration
	// ObserveTurn, when set, is called as each turn begins (metrics, traces): the turn runs in
	// the context it returns, and done is called with how the turn ended.
	ObserveTurn func(ctx context.Context, t Turn) (_ context.Context, done func(*Outcome, error))
	// ObserveTool, likewise, around each tool call of the turn loop.
	ObserveTool func(ctx context.Context, name string) (_ context.Context, done func())

	// writeBehind, when set (NewWriteBehind), commits ephemeral turns after they answer.
	writeBehind *WriteBehind
	// groupCommit, when set (NewGroupCommit), commits the other turns in batches.
	groupCommit *GroupCommit
}

// New returns a pipeline over its dependencies.
func New(st *store.Store, cat *catalog.Catalog, models Models, tools *Tools, log *slog.Logger) *Pipeline {
	if tools == nil {
		tools, _ = NewTools()
	}
	return &Pipeline{store: st, catalog: cat, models: models, tools: tools, log: log, MaxSteps: DefaultMaxSteps,
		ConfirmationTTL: DefaultConfirmationTTL}
}

// Turn is one request to run the agent.
type Turn struct {
	WorkspaceID uuid.UUID
	// Role is the asking key's role: the assistant is offered only the tools it may use, and
	// the zero role none that need a permission. KeyID is the key (uuid.Nil for the
	// development user), kept on the actions the turn parks.
	Role         access.Role
	KeyID        uuid.UUID
	Model        string   // a catalog model id
	Surface      string   // which surface asked: "responses", "chat.completions"
	Instructions []string // client system/developer messages and `instructions`, in order
	// Conversation to continue; nil starts a new one when Persist is set, under
	// NewConversationID when that is set (an id the surface announced before the turn ran).
	Conversation      *store.Conversation
	NewConversationID string
	Seed              []llm.Message // earlier messages given by the client, before Text
	Text              string        // the user's turn text
	// Persist stores the conversation and its messages. An ephemeral turn (false) stores
	// nothing but its spend and events, and may only use safe tools. A stored turn parks its
	// risky and spend tool calls for the user's confirmation, and resolves the actions its
	// conversation had pending (see confirmations).
	Persist bool
	// OnDelta receives the reply text as the model produces it.
	OnDelta func(string) error
	// Record, when set, describes what the surface keeps of the finished turn (a stored
	// response object). The pipeline writes it in the transaction that commits the turn
	// (store.Tx.WriteTurnRecord), so the surface never holds the transaction; its events
	// are appended after the turn's own.
	Record func(out *Outcome) (store.TurnRecord, error)

	// Optional settings of a deployed agent's turn (package converse); the zero values keep
	// the builder assistant's behaviour.
	System      string     // replaces the service prompt and Instructions when not empty
	Tools       *Tools     // the tools offered instead of the pipeline's catalog
	Temperature *float64   // sampling temperature sent to the vendor
	MaxTokens   int        // output token bound sent to the vendor; 0: the adapter's default
	AgentID     *uuid.UUID // the deployed agent answering; named in turn.completed
}

// Outcome is what a turn produced and cost.
type Outcome struct {
	Conversation    *store.Conversation // nil for ephemeral turns
	NewConversation bool
	Text            string
	Finish          llm.FinishReason
	Usage           llm.Usage
	Model           catalog.Model
	CostNanoUSD     int64
	Steps           int
	// Parked are the actions the turn parked for confirmation, written when it commits.
	Parked []store.PendingAction
}

// Run runs the turn. On an upstream failure the usage already consumed is still charged, and
// the returned error is an *apierr.Error of kind KindUpstream.
func (p *Pipeline) Run(ctx context.Context, t Turn) (*Outcome, error) {
	if p.ObserveTurn == nil {
		return p.run(ctx, t)
	}
	ctx, done := p.ObserveTurn(ctx, t)
	out, err := p.run(ctx, t)
	done(out, err)
	return out, err
}

func (p *Pipeline) run(ctx context.Context, t Turn) (*Outcome, error) {
	model, ok := p.catalog.Lookup(t.Model)
	if !ok {
		return nil, apierr.Invalid("model", "model_not_found", "The model %q does not exist or is not offered here.", t.Model)
	}
	if err := refuseNUL(t); err != nil {
		return nil, err
	}
	client, err := p.models.For(string(model.Family))
	if err != nil {
		return nil, apierr.Internal(err)
	}
	out := &Outcome{Conversation: t.Conversation, Model: model}
	// The group committer closes a batch early once every turn on its way to it has arrived.
	tk := p.groupCommit.begin(p.groupCommitted(t))
	defer tk.end()
	// Only the builder assistant's own tools park; a deployed agent's turn (its own catalog)
	// has nothing to confirm, and a visitor's "YES 1234" is just text.
	if t.Persist && t.Conversation != nil && t.Tools == nil {
		answered, err := p.confirmations(ctx, &t, out)
		if err != nil {
			return nil, err
		}
		if answered {
			reply := []llm.Message{{Role: llm.RoleAssistant, Text: out.Text}}
			if err := p.commit(ctx, t, out, reply, tk); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	history, err := p.history(ctx, t, model)
	if err != nil {
		return nil, err
	}
	produced, err := p.loop(ctx, t, client, model, history, out)
	if err != nil {
		return nil, p.failed(ctx, t, out, err)
	}
	if err := p.commit(ctx, t, out, produced, tk); err != nil {
		// The vendor answered, so the turn costs what it used even though nothing else of it
		// is kept; unless another run of the same background response finished it first:
		// then the caller never sees this run's answer, and is not billed for the duplicate.
		var dup supersededError
		if !errors.As(err, &dup) {
			p.meter(ctx, t, out)
		}
		return nil, err
	}
	return out, nil
}

// HistoryMaxMessages is the most stored messages a turn sends, however large the model's
// context window: the newest ones (see HistoryWindow).
const HistoryMaxMessages = 256

// DefaultContextTokens is the window assumed for a model whose catalog entry gives none.
const DefaultContextTokens = 128_000

// historyBytesPerToken converts a context window into bytes of stored text, conservatively:
// English runs about four bytes a token, other scripts about three.
const historyBytesPerToken = 3

// HistoryWindow is how many bytes of a stored conversation a turn on model may send: the
// model's context window less the answer's token limit, nine tenths of it (the rest is left
// to the tools' schemas and to the estimate's error), less what the turn sends besides the
// stored messages (system prompt, seed messages, the turn's text), three bytes a token.
// Together with HistoryMaxMessages it bounds the work of a turn whatever the length of its
// conversation: the oldest messages are left out first; the system prompt and the turn's
// own message are always sent.
func HistoryWindow(model catalog.Model, t Turn) int64 {
	maxOut := int64(t.MaxTokens)
	if maxOut <= 0 {
		maxOut = llm.DefaultMaxTokens
	}
	window := int64(model.ContextTokens)
	if window <= 0 {
		window = DefaultContextTokens
	}
	budget := (window - maxOut) * 9 / 10 * historyBytesPerToken
	system := t.System
	if system == "" {
		system = systemPrompt(t.Instructions)
	}
	budget -= int64(len(t.Text) + len(system))
	for _, m := range t.Seed {
		budget -= int64(len(m.Text))
	}
	return max(budget, 0)
}

// history is the stored conversation's newest messages that fit the model's window
// (HistoryWindow), then the client's seed messages, then the turn text.
func (p *Pipeline) history(ctx context.Context, t Turn, model catalog.Model) ([]llm.Message, error) {
	var msgs []llm.Message
	if t.Conversation != nil {
		stored, err := p.store.HistoryWindow(ctx, t.WorkspaceID, t.Conversation.ID, HistoryMaxMessages, HistoryWindow(model, t))
		if err != nil {
			return nil, err
		}
		// A window that starts with tool results lost the call they answer: vendors refuse that.
		for len(stored) > 0 && stored[0].Role == string(llm.RoleTool) {
			stored = stored[1:]
		}
		for _, m := range stored {
			msg, err := FromStored(m)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, msg)
		}
	}
	msgs = append(msgs, t.Seed...)
	return append(msgs, llm.Message{Role: llm.RoleUser, Text: t.Text}), nil
}

// loop calls the model until it answers without tool calls, running the tools it asks for in
// between. It returns the assistant and tool messages the turn produced.
func (p *Pipeline) loop(ctx context.Context, t Turn, client llm.Client, model catalog.Model, history []llm.Message, out *Outcome) ([]llm.Message, error) {
	req := llm.Request{Model: model.Upstream, System: systemPrompt(t.Instructions), Messages: history,
		Temperature: t.Temperature, MaxTokens: t.MaxTokens}
	if t.System != "" {
		req.System = t.System
	}
	tools := p.tools
	if t.Tools != nil {
		tools = t.Tools
	}
	var produced []llm.Message
	sc := scope{workspaceID: t.WorkspaceID, role: t.Role, ephemeral: !t.Persist, park: p.parker(t, out)}
	for step := 1; ; step++ {
		req.Tools = nil
		if step < p.MaxSteps {
			req.Tools = tools.Offered(t.Role, !t.Persist)
		}
		res, err := client.Generate(ctx, req, t.OnDelta)
		scrub(&res)
		out.Usage = out.Usage.Add(res.Usage)
		out.Steps = step
		if err != nil {
			return nil, err
		}
		out.Text += res.Text
		out.Finish = res.Finish
		if len(res.ToolCalls) == 0 || req.Tools == nil {
			if out.Finish == llm.FinishToolCalls { // tools were withheld on the last step
				out.Finish = llm.FinishStop
			}
			text := res.Text
			if notice := p.confirmationNotice(out); notice != "" {
				// The user must learn the code even when the model forgot to say it.
				if t.OnDelta != nil {
					if err := t.OnDelta(notice); err != nil {
						return nil, err
					}
				}
				out.Text += notice
				text += notice
			}
			produced = append(produced, llm.Message{Role: llm.RoleAssistant, Text: text})
			return produced, nil
		}
		call := llm.Message{Role: llm.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls}
		results := llm.Message{Role: llm.RoleTool}
		for _, tc := range res.ToolCalls {
			result := p.runTool(ctx, tools, sc, tc)
			result.Content = inputguard.Scrub(result.Content)
			results.ToolResults = append(results.ToolResults, result)
		}
		produced = append(produced, call, results)
		req.Messages = append(req.Messages, call, results)
	}
}

// runTool runs one tool call of the turn's catalog, observed when ObserveTool is set.
func (p *Pipeline) runTool(ctx context.Context, tools *Tools, sc scope, tc llm.ToolCall) llm.ToolResult {
	if p.ObserveTool == nil {
		return tools.run(ctx, sc, tc)
	}
	ctx, done := p.ObserveTool(ctx, tc.Name)
	defer done()
	return tools.run(ctx, sc, tc)
}

// refuseNUL refuses a turn whose input holds a NUL character, which PostgreSQL would refuse
// at commit, after the model call. The HTTP and MCP guards refuse it with the field's path
// first; this covers every other way into a turn.
func refuseNUL(t Turn) error {
	texts := append([]string{t.Text}, t.Instructions...)
	for _, m := range t.Seed {
		texts = append(texts, m.Text)
		for _, c := range m.ToolCalls {
			if _, found := inputguard.JSONNUL(c.Arguments); found {
				return inputguard.NUL("input")
			}
			texts = append(texts, c.ID, c.Name)
		}
		for _, r := range m.ToolResults {
			texts = append(texts, r.CallID, r.Name, r.Content)
		}
	}
	for _, s := range texts {
		if inputguard.HasNUL(s) {
			return inputguard.NUL("input")
		}
	}
	return nil
}

// scrub replaces NUL characters in what the vendor answered: the model's words are stored
// whatever they are, and PostgreSQL refuses U+0000 in text and jsonb.
func scrub(res *llm.Result) {
	res.Text = inputguard.Scrub(res.Text)
	for i, c := range res.ToolCalls {
		res.ToolCalls[i] = llm.ToolCall{ID: inputguard.Scrub(c.ID), Name: inputguard.Scrub(c.Name), Arguments: inputguard.ScrubJSON(c.Arguments)}
	}
}

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
		return p.settle(ctx, tx, t.WorkspaceID, out, u.events, u.recorded)
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

// failed meters what a failed turn already consumed and turns the failure into the error
// the caller sees.
func (p *Pipeline) failed(ctx context.Context, t Turn, out *Outcome, cause error) error {
	p.meter(ctx, t, out)
	var le *llm.Error
	if errors.As(cause, &le) {
		return &apierr.Error{Kind: apierr.KindUpstream, Code: string(le.Kind), Err: le,
			Message: "The model vendor failed: " + le.Message,
			Hint:    "Retry with exponential backoff; if it keeps failing, try another model or report the X-Request-Id."}
	}
	if e := apierr.As(cause); e != nil {
		return e
	}
	if errors.Is(cause, context.Canceled) {
		return cause
	}
	return apierr.Internal(cause)
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
