package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/llm"
	"switchboard/shortid"
	"switchboard/store"
)

// DefaultConfirmationTTL is how long a parked action waits for `YES <code>` (CONFIRMATION_TTL).
const DefaultConfirmationTTL = 15 * time.Minute

// codeDigits is the length of a confirmation code: six digits, one chance in a million of
// guessing it, and short enough to type.
const codeDigits = 6

// yesReply matches a confirming reply: YES and a code, in any case, spaces around ignored.
var yesReply = regexp.MustCompile(`(?i)^\s*yes\s+([0-9]{4,})\s*$`)

// yesCode returns the code of a `YES <code>` reply.
func yesCode(text string) (string, bool) {
	m := yesReply.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// now is the pipeline's clock.
func (p *Pipeline) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func newCode() string {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return fmt.Sprintf("%0*d", codeDigits, n.Int64())
}

// parker parks the risky and spend calls of one stored turn: each becomes a pending action,
// kept on the outcome and written when the turn commits (persist), with its
// confirmation.requested event.
func (p *Pipeline) parker(t Turn, out *Outcome) func(context.Context, Tool, llm.ToolCall) (any, error) {
	return func(ctx context.Context, tool Tool, call llm.ToolCall) (any, error) {
		prepared, err := prepare(ctx, tool, Call{WorkspaceID: t.WorkspaceID, Arguments: call.Arguments})
		if err != nil || prepared.Result != nil {
			return prepared.Result, err
		}
		a := store.PendingAction{ID: uuid.New(), ShortID: shortid.New(shortid.Action), Code: p.freshCode(out),
			Tool: tool.Name, Arguments: prepared.Arguments, Summary: prepared.Summary, Role: t.Role.String(),
			ExpiresAt: p.now().Add(p.ConfirmationTTL), WorkspaceID: t.WorkspaceID}
		if t.KeyID != uuid.Nil {
			id := t.KeyID
			a.KeyID = &id
		}
		if len(a.Arguments) == 0 {
			a.Arguments = json.RawMessage("{}")
		}
		out.Parked = append(out.Parked, a)
		told := map[string]any{
			"status": "awaiting_confirmation", "action_id": a.ShortID, "code": a.Code, "summary": a.Summary,
			"expires_at": a.ExpiresAt.UTC().Format(time.RFC3339),
			"instructions": "Nothing has been done yet. Tell the user what will happen and that they must reply `YES " +
				a.Code + "` to confirm it; any other reply cancels it.",
		}
		for k, v := range prepared.Details {
			told[k] = v
		}
		return told, nil
	}
}

// freshCode is a code no other action of this turn has (the turn's conversation has no other
// pending action: they were resolved when the turn began).
func (p *Pipeline) freshCode(out *Outcome) string {
	for {
		code := newCode()
		clash := false
		for _, a := range out.Parked {
			clash = clash || a.Code == code
		}
		if !clash {
			return code
		}
	}
}

// confirmationNotice is what the reply must say of each parked action; it is appended when
// the model's text does not name the code.
func (p *Pipeline) confirmationNotice(out *Outcome) string {
	var b strings.Builder
	for _, a := range out.Parked {
		if strings.Contains(out.Text, a.Code) {
			continue
		}
		fmt.Fprintf(&b, "\n\nTo confirm: %s. Reply YES %s within %s; any other reply cancels it.", strings.TrimSuffix(a.Summary, "."), a.Code, humanDuration(p.ConfirmationTTL))
	}
	if b.Len() > 0 && out.Text == "" {
		return strings.TrimPrefix(b.String(), "\n\n")
	}
	return b.String()
}

func humanDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int(d/time.Minute), "minute")
	}
	return d.String()
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// requestedEvent and resolvedEvent carry the conversation of the action, none ("") for an
// action parked over MCP.
func requestedEvent(a store.PendingAction, conversation string) store.NewEvent {
	return store.NewEvent{Type: "confirmation.requested", Data: withConversation(map[string]any{
		"action_id": a.ShortID, "action_code": a.Code, "summary": a.Summary}, conversation)}
}

func resolvedEvent(a store.PendingAction, resolution, conversation string) store.NewEvent {
	return store.NewEvent{Type: "confirmation.resolved", Data: withConversation(map[string]any{
		"action_id": a.ShortID, "action_code": a.Code, "resolution": resolution}, conversation)}
}

func withConversation(data map[string]any, conversation string) map[string]any {
	if conversation != "" {
		data["conversation_id"] = conversation
	}
	return data
}

// confirmations resolves the conversation's pending actions before a stored turn runs: a
// `YES <code>` reply approves (and runs) the action of that code, anything else rejects
// them, and those past their expiry expire. It reports whether the platform answered the
// turn itself (out.Text set: the result of a confirmed action, or why nothing ran); else the
// turn goes on to the model, told of the actions it rejected.
func (p *Pipeline) confirmations(ctx context.Context, t *Turn, out *Outcome) (bool, error) {
	code, isYes := yesCode(t.Text)
	conv := t.Conversation
	var approved *store.PendingAction
	var answer string
	err := p.store.InTx(ctx, func(tx *store.Tx) error {
		approved, answer = nil, ""
		pending, err := tx.PendingActionsForUpdate(ctx, t.WorkspaceID, conv.ID)
		if err != nil || len(pending) == 0 {
			return err
		}
		var events []store.NewEvent
		for _, a := range pending {
			resolution := p.judge(ctx, *t, a, code, isYes, &answer)
			if resolution == store.ActionApproved {
				approved = &a
			} else if resolution == store.ActionRejected && !(isYes && a.Code == code) {
				t.Instructions = append(t.Instructions, fmt.Sprintf(
					"The user did not confirm the pending action %q (code %s), so it was cancelled and did not run. Do not run it unless the user asks for it again.", a.Summary, a.Code))
			}
			if err := tx.ResolveAction(ctx, t.WorkspaceID, a.ID, resolution); err != nil {
				return err
			}
			if err := auditApproval(ctx, tx, t.WorkspaceID, a, resolution); err != nil {
				return err
			}
			events = append(events, resolvedEvent(a, resolution, conv.ShortID))
		}
		_, err = tx.AppendEvents(ctx, t.WorkspaceID, events)
		return err
	})
	if err != nil {
		return false, err
	}
	switch {
	case approved != nil:
		answer = p.execute(ctx, *t, *approved)
	case answer == "" && isYes:
		answer, err = p.alreadyResolved(ctx, *t, code)
		if err != nil {
			return false, err
		}
	}
	if answer == "" {
		return false, nil
	}
	out.Text, out.Finish = answer, llm.FinishStop
	if t.OnDelta != nil {
		return true, t.OnDelta(answer)
	}
	return true, nil
}

// judge decides the resolution of one pending action for the turn's input; when the input
// was a `YES` for it that cannot run, answer says why.
func (p *Pipeline) judge(ctx context.Context, t Turn, a store.PendingAction, code string, isYes bool, answer *string) string {
	mine := isYes && a.Code == code
	if !p.now().Before(a.ExpiresAt) {
		if mine {
			*answer = fmt.Sprintf("The code %s has expired, so nothing was done (%s). Ask again if you still want it.", a.Code, strings.TrimSuffix(a.Summary, "."))
		}
		return store.ActionExpired
	}
	if !mine {
		return store.ActionRejected
	}
	tool, ok := p.tools.Lookup(a.Tool)
	if !ok {
		*answer = fmt.Sprintf("The action %s can no longer run here, so nothing was done.", a.Code)
		return store.ActionRejected
	}
	if err := access.Check(t.Role, tool.Permission, "Confirming "+tool.Name); err != nil {
		*answer = fmt.Sprintf("Nothing was done: %s", apierr.As(err).Message)
		return store.ActionRejected
	}
	if resolution, why := p.recheck(ctx, tool, a, Call{WorkspaceID: t.WorkspaceID, Arguments: a.Arguments, ConversationID: a.ConversationID}); resolution != "" {
		*answer = fmt.Sprintf("Nothing was done (%s): %s", strings.TrimSuffix(a.Summary, "."), why)
		return resolution
	}
	return store.ActionApproved
}

// execute runs an approved action, records its result and says what happened.
func (p *Pipeline) execute(ctx context.Context, t Turn, a store.PendingAction) string {
	tool, _ := p.tools.Lookup(a.Tool)
	result, err := tool.Run(ctx, Call{WorkspaceID: t.WorkspaceID, Arguments: a.Arguments, ConversationID: a.ConversationID})
	record := any(result)
	var answer string
	if err != nil {
		msg := "an internal error occurred"
		if e := apierr.As(err); e != nil && e.Kind != apierr.KindInternal {
			msg = e.Message
		} else {
			p.log.ErrorContext(ctx, "confirmed action failed", slog.String("action", a.ShortID), slog.String("error", err.Error()))
		}
		record = map[string]any{"error": msg}
		answer = fmt.Sprintf("Confirmed %s, but it failed: %s (%s).", a.Code, msg, strings.TrimSuffix(a.Summary, "."))
	} else {
		body, _ := json.Marshal(result)
		answer = fmt.Sprintf("Done: %s (confirmed with %s). Result: %s", strings.TrimSuffix(a.Summary, "."), a.Code, body)
	}
	body, _ := json.Marshal(record)
	// The action ran: a failure to note its result must not make the turn fail, which would
	// hide that it ran.
	if err := p.store.SetActionResult(context.WithoutCancel(ctx), t.WorkspaceID, a.ID, body); err != nil {
		p.log.ErrorContext(ctx, "recording an action's result", slog.String("action", a.ShortID), slog.String("error", err.Error()))
	}
	return answer
}

// alreadyResolved answers a `YES <code>` for a code of the conversation that is no longer
// pending (a second confirmation, say); empty when the conversation never had that code.
func (p *Pipeline) alreadyResolved(ctx context.Context, t Turn, code string) (string, error) {
	a, err := p.store.LatestActionWithCode(ctx, t.WorkspaceID, t.Conversation.ID, code)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("The action %s was already %s; nothing was run again.", a.Code, a.Status), nil
}

// ExpireActions resolves as expired the pending actions past their expiry, with their
// confirmation.resolved events, a batch at a time; it returns how many expired.
func (p *Pipeline) ExpireActions(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := p.store.InTx(ctx, func(tx *store.Tx) error {
			expired, err := tx.ExpireActions(ctx, 500)
			n = len(expired)
			if err != nil || n == 0 {
				return err
			}
			byWorkspace := map[uuid.UUID][]store.NewEvent{}
			var order []uuid.UUID
			for _, a := range expired {
				convRef := "" // an action parked over MCP has no conversation
				if a.ConversationID != uuid.Nil {
					conv, err := tx.ConversationByRef(ctx, a.WorkspaceID, a.ConversationID.String())
					if err != nil {
						return err
					}
					convRef = conv.ShortID
				}
				if byWorkspace[a.WorkspaceID] == nil {
					order = append(order, a.WorkspaceID)
				}
				byWorkspace[a.WorkspaceID] = append(byWorkspace[a.WorkspaceID], resolvedEvent(a, store.ActionExpired, convRef))
			}
			// One order of locks for every process: two expirers never wait on each other.
			slices.SortFunc(order, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
			for _, ws := range order {
				if _, err := tx.AppendEvents(ctx, ws, byWorkspace[ws]); err != nil {
					return err
				}
			}
			return nil
		})
		total += n
		if err != nil || n < 500 {
			return total, err
		}
	}
}

// RunExpirer expires pending actions every interval until ctx ends.
func (p *Pipeline) RunExpirer(ctx context.Context, interval time.Duration) {
	for {
		if n, err := p.ExpireActions(ctx); err != nil && ctx.Err() == nil {
			p.log.ErrorContext(ctx, "expiring pending actions", slog.String("error", err.Error()))
		} else if n > 0 {
			p.log.InfoContext(ctx, "expired pending actions", slog.Int("count", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// auditApproval records an approved action in the audit log, in the transaction that
// resolves it (the action then runs, and its own change, if audited, is recorded too).
func auditApproval(ctx context.Context, tx *store.Tx, ws uuid.UUID, a store.PendingAction, resolution string) error {
	if resolution != store.ActionApproved {
		return nil
	}
	return audit.Record(ctx, tx, ws, audit.ConfirmationApproved, "action", a.ShortID,
		map[string]any{"tool": a.Tool, "summary": a.Summary, "arguments": a.Arguments})
}
