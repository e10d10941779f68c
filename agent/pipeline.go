// Package agent runs agent turns: it assembles the prompt (the service's system prompt, then
// the client's additional instructions), loads history, runs the tool-call loop against a
// model, meters the usage, and commits messages, spend and events in one transaction.
package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/inputguard"
	"switchboard/llm"
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
	// Now is the clock parked actions expire by (time.Now when nil); tests move it.
	Now func() time.Time
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
	// Prelude are messages of the turn itself that come after Text and before the model's
	// first call: a call of one of the turn's tools that the caller ran on the model's behalf,
	// and its result (a deployed agent's knowledge search: converse). The model gets them as
	// if it had asked, and they are stored with what it produces.
	Prelude []llm.Message
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

	// Also, when set, is the caller's writes committed in the turn's own transaction, after
	// its messages and before its settlement: what the caller made of the turn (a channel's
	// inbound message answered, its reply) is durable exactly when the turn is, so a rerun
	// after a crash finds either both or neither. The settlements it returns (its own charges
	// of the workspace) are settled with the turn's, in one statement. Such a turn is group
	// committed like any stored turn (GroupCommit), so its transaction may be a batch's,
	// pipelined: a write that needs a plain transaction (a job's insert) checks
	// Tx.Pipelined and returns store.ErrNeedsPlainTx, and the turn is committed again alone
	// in a plain one. It may run again whenever its transaction is retried, so it decides
	// from out alone.
	Also func(ctx context.Context, tx *store.Tx, out *Outcome) ([]store.Settlement, error)

	// History, when set, is the Conversation's stored window the caller has read already
	// (a deployed agent's turn reads it with the conversation's state: store.AgentTurnState),
	// with at most HistoryMaxMessages messages in History.MaxBytes. The turn uses it instead
	// of reading the window again when History.MaxBytes is at most this turn's
	// HistoryWindow (the caller may have reserved room for a Prelude it had yet to make).
	History *History

	// Recall, when set, is what the model is given of the stored window (History, or the
	// window the turn reads itself): a deployed agent leaves out the knowledge searches of its
	// older turns (converse). It returns a slice of its own; the messages it is given may be
	// a cache's, and are not to be changed.
	Recall func(stored []llm.Message) []llm.Message

	// Opened are the events of the Conversation's opening (a deployed agent's
	// conversation.created), which the caller left for the turn to settle with its own, first:
	// opening a conversation then takes no lock on the workspace row through a commit of its
	// own. When the turn is not committed they are the caller's to settle.
	Opened []store.NewEvent

	// OutlastOutage, when positive, is how long the turn's commit is tried again while the
	// database is out of reach (store.Unavailable), a little later each time: a turn nobody
	// waits on (a background response) keeps the answer the vendor gave during an outage
	// instead of failing and asking the vendor again once the database is back. A caller's
	// context still ends it sooner.
	OutlastOutage time.Duration
}

// History is a conversation's stored window read before the turn (Turn.History), decoded
// (FromStored).
type History struct {
	MaxBytes int64 // the HistoryWindow it was read with
	Messages []llm.Message
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

	appended *appendedTurn // what the commit wrote of the conversation (Appended)
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
	return max(budget-PreludeBytes(t.Prelude), 0)
}

// PreludeBytes is what a Turn.Prelude takes of the history window: its texts, tool
// arguments and results.
func PreludeBytes(prelude []llm.Message) int64 {
	var n int64
	for _, m := range prelude {
		n += int64(len(m.Text))
		for _, c := range m.ToolCalls {
			n += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
		}
		for _, r := range m.ToolResults {
			n += int64(len(r.CallID) + len(r.Name) + len(r.Content))
		}
	}
	return n
}

// history is the stored conversation's newest messages that fit the model's window
// (HistoryWindow), then the client's seed messages, then the turn text and its Prelude.
func (p *Pipeline) history(ctx context.Context, t Turn, model catalog.Model) ([]llm.Message, error) {
	var msgs []llm.Message
	if t.Conversation != nil {
		window := HistoryWindow(model, t)
		if t.History != nil && t.History.MaxBytes <= window {
			msgs = append(msgs, t.History.Messages...)
		} else {
			stored, err := p.store.HistoryWindow(ctx, t.WorkspaceID, t.Conversation.ID, HistoryMaxMessages, window)
			if err != nil {
				return nil, err
			}
			for _, m := range stored {
				msg, err := FromStored(m)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, msg)
			}
		}
		if t.Recall != nil {
			msgs = t.Recall(msgs)
		}
		// A window that starts with tool results lost the call they answer: vendors refuse that.
		for len(msgs) > 0 && msgs[0].Role == llm.RoleTool {
			msgs = msgs[1:]
		}
	}
	msgs = append(msgs, t.Seed...)
	return append(append(msgs, llm.Message{Role: llm.RoleUser, Text: t.Text}), t.Prelude...), nil
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
	produced := append([]llm.Message(nil), t.Prelude...) // already in history, after the text
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
