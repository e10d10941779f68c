package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/manage"
	"switchboard/store"
)

// buildThread is a builder conversation as the Build page shows it: its messages in order,
// each reply followed by the cards of what it did (an agent created or changed) and of the
// actions it parked for confirmation.
type buildThread struct {
	Ref   string
	Items []buildItem
}

// buildItem is one message, or one card; exactly one field is set.
type buildItem struct {
	Message *transcriptMessage
	Action  *buildAction
	Agent   *buildAgent
}

// buildAction is a parked action as its card shows it.
type buildAction struct {
	ShortID, Code, Summary string
	// State is pending, approved, rejected, expired or aborted_drift; a pending action past
	// its expiry reads expired (the expirer may not have run yet), as confirming it would.
	State     string
	Needs     string // the role confirming it takes
	ExpiresAt time.Time
}

// buildAgent is an agent the assistant created or changed, linked to its page and test chat.
type buildAgent struct {
	ID, Name, Verb string
}

// parkedCode finds the code a reply announced when its turn parked an action
// (agent.confirmationNotice: "Reply YES 123456 within …").
var parkedCode = regexp.MustCompile(`Reply YES ([0-9]{4,})`)

func (h *dash) buildThreadOf(r *http.Request, p store.Principal, ref string) (*buildThread, error) {
	ctx := r.Context()
	c, err := h.Store.ConversationByRef(ctx, p.WorkspaceID, ref)
	if err != nil {
		return nil, err
	}
	msgs, err := h.Store.MessagesWithUsage(ctx, p.WorkspaceID, c.ID)
	if err != nil {
		return nil, err
	}
	t := &buildThread{Ref: c.ShortID}
	for _, m := range transcriptOf(msgs) {
		if m.Role == "tool" {
			continue // results are read from the calls they answer
		}
		if m.Content != "" {
			t.Items = append(t.Items, buildItem{Message: &m})
		}
		for _, call := range m.Calls {
			if a := agentOfResult(call); a != nil {
				t.Items = append(t.Items, buildItem{Agent: a})
			}
		}
		for _, code := range parkedCode.FindAllStringSubmatch(m.Content, -1) {
			items, err := h.actionCards(r, p, c.ID, code[1])
			if err != nil {
				return nil, err
			}
			t.Items = append(t.Items, items...)
		}
	}
	return t, nil
}

// agentOfResult is the card of an agent a create_agent or update_agent call (run at once)
// made or changed; nil for other calls and failures.
func agentOfResult(c toolCall) *buildAgent {
	verb := map[string]string{"create_agent": "Created", "update_agent": "Changed"}[c.Name]
	if verb == "" || !c.HasResult || c.IsError {
		return nil
	}
	var res struct {
		Success   bool   `json:"success"`
		AgentID   string `json:"agentId"`
		AgentName string `json:"agentName"`
	}
	if json.Unmarshal([]byte(c.Result), &res) != nil || !res.Success || res.AgentID == "" {
		return nil
	}
	return &buildAgent{ID: res.AgentID, Name: res.AgentName, Verb: verb}
}

// actionCards is the card of the action parked with code, and, once it ran, the card of the
// agent it changed.
func (h *dash) actionCards(r *http.Request, p store.Principal, conv uuid.UUID, code string) ([]buildItem, error) {
	ctx := r.Context()
	a, err := h.Store.LatestActionWithCode(ctx, p.WorkspaceID, conv, code)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	card := &buildAction{ShortID: a.ShortID, Code: a.Code, Summary: a.Summary, State: a.Status, ExpiresAt: a.ExpiresAt}
	if card.State == "pending" && !time.Now().Before(a.ExpiresAt) {
		card.State = store.ActionExpired
	}
	for _, op := range h.Ops.Operations() {
		if op.Name == a.Tool {
			card.Needs = access.Needs(op.Permission).String()
		}
	}
	items := []buildItem{{Action: card}}
	if a.Status != store.ActionApproved || a.Tool == "delete_agent" {
		return items, nil
	}
	changed, err := h.changedAgent(r, p, a.Arguments)
	if changed != nil {
		items = append(items, buildItem{Agent: changed})
	}
	return items, err
}

// changedAgent is the card of the agent an approved action named (agent_id), nil when it
// named none or the agent is gone since.
func (h *dash) changedAgent(r *http.Request, p store.Principal, arguments json.RawMessage) (*buildAgent, error) {
	var args struct {
		AgentID string `json:"agent_id"`
	}
	if json.Unmarshal(arguments, &args) != nil || args.AgentID == "" {
		return nil, nil //nolint:nilerr // arguments without an agent make no card
	}
	ag, err := h.Ops.GetAgent(r.Context(), p.WorkspaceID, manage.GetAgentInput{AgentID: args.AgentID})
	var nf *store.NotFoundError
	if errors.As(err, &nf) || apierr.As(err) != nil && apierr.As(err).Status() == http.StatusNotFound {
		return nil, nil
	}
	if err != nil || ag.Agent == nil {
		return nil, err
	}
	return &buildAgent{ID: ag.Agent.ID, Name: ag.Agent.Name, Verb: "Changed"}, nil
}
