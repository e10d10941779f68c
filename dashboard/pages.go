package dashboard

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/accounts"
	"switchboard/apierr"
	"switchboard/events"
	"switchboard/manage"
	"switchboard/store"
)

// signInData is the sign-in form.
type signInData struct {
	Email string
	Next  string
}

func safeNext(next string) string {
	// Only a path of the dashboard: never another site (an open redirect).
	if !strings.HasPrefix(next, Prefix+"/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return Prefix + "/"
	}
	return next
}

func (h *dash) signInPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Data: signInData{Next: safeNext(r.URL.Query().Get("next"))}})
}

func (h *dash) signIn(w http.ResponseWriter, r *http.Request) {
	email, password := r.PostFormValue("email"), r.PostFormValue("password")
	next := safeNext(r.PostFormValue("next"))
	addr, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		addr = r.RemoteAddr
	}
	u, err := h.Accounts.SignIn(r.Context(), email, password, addr)
	var limited *accounts.RateLimitedError
	switch {
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", itoa(max(1, int(limited.RetryAfter.Seconds()+0.5))))
		h.render(w, r, http.StatusTooManyRequests, "signin", view{Title: "Sign in", Error: "Too many sign-in attempts: " + limited.Error() + ".",
			Data: signInData{Email: email, Next: next}})
		return
	case errors.Is(err, accounts.ErrBadCredentials):
		h.render(w, r, http.StatusUnauthorized, "signin", view{Title: "Sign in", Error: "The email or password is wrong.",
			Data: signInData{Email: email, Next: next}})
		return
	case err != nil:
		h.fail(w, r, store.Principal{}, err)
		return
	}
	if err := h.Accounts.StartSession(r.Context(), u); err != nil {
		h.fail(w, r, store.Principal{}, err)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther) //nolint:gosec // safeNext keeps it a path of the dashboard
}

type setPasswordData struct {
	Token string
	Email string
	Min   int
}

func (h *dash) setPasswordPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	u, err := h.Accounts.UserOfLink(r.Context(), token)
	if errors.Is(err, accounts.ErrLinkInvalid) {
		h.render(w, r, http.StatusNotFound, "error", view{Title: "Link not valid", Error: "This link is unknown, used or expired; ask an admin for a new one.", Status: 404})
		return
	}
	if err != nil {
		h.fail(w, r, store.Principal{}, err)
		return
	}
	h.render(w, r, http.StatusOK, "setpassword", view{Title: "Set your password", Data: setPasswordData{Token: token, Email: u.Email, Min: accounts.MinPasswordLength}})
}

func (h *dash) setPassword(w http.ResponseWriter, r *http.Request) {
	token, password := r.PostFormValue("token"), r.PostFormValue("password")
	if password != r.PostFormValue("confirm") {
		h.render(w, r, http.StatusBadRequest, "setpassword", view{Title: "Set your password", Error: "The two passwords differ.",
			Data: setPasswordData{Token: token, Min: accounts.MinPasswordLength}})
		return
	}
	u, err := h.Accounts.SetPassword(r.Context(), token, password)
	if errors.Is(err, accounts.ErrLinkInvalid) {
		h.render(w, r, http.StatusNotFound, "error", view{Title: "Link not valid", Error: "This link is unknown, used or expired; ask an admin for a new one.", Status: 404})
		return
	}
	if e := apierr.As(err); e != nil {
		h.render(w, r, e.Status(), "setpassword", view{Title: "Set your password", Error: e.Message,
			Data: setPasswordData{Token: token, Min: accounts.MinPasswordLength}})
		return
	}
	if err != nil {
		h.fail(w, r, store.Principal{}, err)
		return
	}
	if err := h.Accounts.StartSession(r.Context(), u); err != nil {
		h.fail(w, r, store.Principal{}, err)
		return
	}
	h.flash(w, r, Prefix+"/", "Your password is set; you are signed in.")
}

func (h *dash) signOut(w http.ResponseWriter, r *http.Request) {
	if err := h.Accounts.SignOut(r.Context()); err != nil {
		h.fail(w, r, store.Principal{}, err)
		return
	}
	http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
}

func (h *dash) signOutEverywhere(w http.ResponseWriter, r *http.Request, p store.Principal) {
	if err := h.Accounts.SignOutEverywhere(r.Context(), p); err != nil {
		h.fail(w, r, p, err)
		return
	}
	http.Redirect(w, r, Prefix+"/sign-in", http.StatusSeeOther)
}

// overviewData is the overview: balance, the last 30 days, and the top agents.
type overviewData struct {
	Days        []store.DayUsage // 30 entries, oldest first, zero days included
	SpendChart  chart
	TurnsChart  chart
	TotalSpend  int64
	TotalTurns  int64
	TopAgents   []store.AgentUsage
	PeriodStart time.Time
}

func (h *dash) overview(w http.ResponseWriter, r *http.Request, p store.Principal) {
	ctx := r.Context()
	today := time.Now().UTC().Truncate(24 * time.Hour)
	since := today.AddDate(0, 0, -29)
	rows, err := h.Store.DailyUsage(ctx, p.WorkspaceID, since)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	top, err := h.Store.TopAgents(ctx, p.WorkspaceID, since, 5)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := overviewData{Days: fillDays(rows, since, 30), TopAgents: top, PeriodStart: since}
	spend, turns := make([]point, len(d.Days)), make([]point, len(d.Days))
	for i, day := range d.Days {
		d.TotalSpend += day.SpendNanoUSD
		d.TotalTurns += day.Turns
		label := day.Day.Format("Jan 2")
		spend[i] = point{Label: label, Value: float64(day.SpendNanoUSD) / 1e9, Text: usd(day.SpendNanoUSD), Exact: usdExact(day.SpendNanoUSD)}
		turns[i] = point{Label: label, Value: float64(day.Turns), Text: itoa(int(day.Turns)) + " turns"}
	}
	d.SpendChart = barChart("Spend per day, last 30 days (USD)", spend, "$", "No spend in the last 30 days.")
	d.TurnsChart = barChart("Turns per day, last 30 days", turns, "", "No turns in the last 30 days.")
	h.render(w, r, http.StatusOK, "overview", view{Title: "Overview", Nav: "overview", P: p, Data: d})
}

// fillDays returns n days from since, with the usage of rows and zero for the others.
func fillDays(rows []store.DayUsage, since time.Time, n int) []store.DayUsage {
	out := make([]store.DayUsage, n)
	for i := range out {
		out[i].Day = since.AddDate(0, 0, i)
	}
	for _, r := range rows {
		i := int(r.Day.UTC().Sub(since).Hours() / 24)
		if i >= 0 && i < n {
			out[i].SpendNanoUSD, out[i].Turns = r.SpendNanoUSD, r.Turns
		}
	}
	return out
}

func (h *dash) agents(w http.ResponseWriter, r *http.Request, p store.Principal) {
	res, err := h.Ops.ListAgents(r.Context(), p.WorkspaceID, manage.ListAgentsInput{})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.render(w, r, http.StatusOK, "agents", view{Title: "Agents", Nav: "agents", P: p, Data: res.Agents})
}

func (h *dash) setAgentStatus(w http.ResponseWriter, r *http.Request, p store.Principal) {
	status := r.PostFormValue("status")
	if status != "enabled" && status != "disabled" {
		h.fail(w, r, p, apierr.Invalid("status", "invalid_value", "status must be enabled or disabled."))
		return
	}
	raw, _ := json.Marshal(status)
	id := r.PathValue("id")
	ref, err := h.Ops.UpdateAgent(r.Context(), p.WorkspaceID, manage.UpdateAgentInput{AgentID: id, Updates: map[string]json.RawMessage{"status": raw}})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/agents/"+id, "The agent "+ref.AgentName+" is now "+status+".")
}

type conversationsData struct {
	Rows    []store.ConversationRow
	Agents  []manage.AgentSummary
	Filter  conversationFilter
	Filters bool
}

type conversationFilter struct {
	Agent, Channel, Status, Label string
}

func (h *dash) conversations(w http.ResponseWriter, r *http.Request, p store.Principal) {
	q := r.URL.Query()
	f := conversationFilter{Agent: q.Get("agent"), Channel: q.Get("channel"), Status: q.Get("status"), Label: q.Get("label")}
	sf := store.ConversationFilter{Channel: f.Channel, Status: f.Status, Label: f.Label, Limit: 100}
	if f.Agent != "" {
		id, err := uuid.Parse(f.Agent)
		if err != nil {
			h.fail(w, r, p, apierr.Invalid("agent", "invalid_value", "agent must be an agent's id."))
			return
		}
		sf.AgentID = &id
	}
	rows, err := h.Store.ListConversations(r.Context(), p.WorkspaceID, sf)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	agents, err := h.Ops.ListAgents(r.Context(), p.WorkspaceID, manage.ListAgentsInput{})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.render(w, r, http.StatusOK, "conversations", view{Title: "Conversations", Nav: "conversations", P: p,
		Data: conversationsData{Rows: rows, Agents: agents.Agents, Filter: f, Filters: f != conversationFilter{}}})
}

type transcriptData struct {
	Conversation store.Conversation
	Messages     []transcriptMessage
	// Call is the phone call that carried the conversation (telco_voice), with its outcome.
	Call *callSummary
}

// callSummary is how a call went, as the transcript page shows it.
type callSummary struct {
	Direction, Remote string
	// Outcome is what the flow did (voicemail, transferred, voicemail_drop, silence, ...);
	// Status is the carrier's final status (completed, busy, no-answer, ...); "" until known.
	Outcome, Status string
	Seconds         int
	Minutes         int
	Ended           bool
}

func callSummaryOf(c store.VoiceCall) *callSummary {
	out := &callSummary{Direction: c.Direction, Remote: c.Remote, Ended: c.EndedAt != nil}
	if c.Outcome != nil {
		out.Outcome = *c.Outcome
	}
	if c.CarrierStatus != nil {
		out.Status = *c.CarrierStatus
	}
	if c.DurationS != nil {
		out.Seconds = *c.DurationS
	}
	if c.Minutes != nil {
		out.Minutes = *c.Minutes
	}
	return out
}

func (h *dash) transcript(w http.ResponseWriter, r *http.Request, p store.Principal) {
	c, err := h.Store.ConversationByRef(r.Context(), p.WorkspaceID, r.PathValue("ref"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	msgs, err := h.Store.MessagesWithUsage(r.Context(), p.WorkspaceID, c.ID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := transcriptData{Conversation: c, Messages: transcriptOf(msgs)}
	if c.Channel == "telco_voice" {
		call, err := h.Store.VoiceCallOfConversation(r.Context(), p.WorkspaceID, c.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			h.fail(w, r, p, err)
			return
		}
		if err == nil {
			d.Call = callSummaryOf(call)
		}
	}
	h.render(w, r, http.StatusOK, "transcript", view{Title: "Conversation " + c.ShortID, Nav: "conversations", P: p, Data: d})
}

type keysData struct {
	Keys      []store.APIKey
	Roles     []string // the roles this user may create keys of
	NewSecret string
	NewKey    store.APIKey
	Session   bool
	Grants    []store.OAuthGrant // MCP clients authorized over OAuth
}

func (h *dash) keysView(r *http.Request, p store.Principal) (keysData, error) {
	keys, err := accounts.ListKeys(r.Context(), h.Store, p)
	if err != nil {
		return keysData{}, err
	}
	slices.Reverse(keys) // newest first
	grants, err := accounts.ListOAuthGrants(r.Context(), h.Store, p)
	if err != nil {
		return keysData{}, err
	}
	d := keysData{Keys: keys, Grants: grants}
	for _, role := range access.Names() {
		if accounts.MayManageKeyOf(p.Access(), role, "Creating") == nil {
			d.Roles = append(d.Roles, role)
		}
	}
	return d, nil
}

func (h *dash) keys(w http.ResponseWriter, r *http.Request, p store.Principal) {
	d, err := h.keysView(r, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.render(w, r, http.StatusOK, "keys", view{Title: "API keys", Nav: "keys", P: p, Data: d})
}

// createKey shows the new secret in its own answer (never stored, never redirected).
func (h *dash) createKey(w http.ResponseWriter, r *http.Request, p store.Principal) {
	k, secret, err := accounts.CreateKey(r.Context(), h.Store, p, r.PostFormValue("name"), r.PostFormValue("role"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d, err := h.keysView(r, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d.NewSecret, d.NewKey = secret, k
	h.render(w, r, http.StatusCreated, "keys", view{Title: "API keys", Nav: "keys", P: p, Data: d})
}

func (h *dash) revokeKey(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, &store.NotFoundError{What: "key"})
		return
	}
	k, err := accounts.RevokeKey(r.Context(), h.Store, p, id)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/keys", "The key "+k.DisplayPrefix+" is revoked; it stopped working everywhere.")
}

type webhookView struct {
	Endpoint store.WebhookEndpoint
	Attempts []store.WebhookAttempt
}

func (h *dash) webhooks(w http.ResponseWriter, r *http.Request, p store.Principal) {
	eps, err := h.Webhooks.List(r.Context(), p, 100)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	out := make([]webhookView, 0, len(eps))
	for _, e := range eps {
		e.Secret = "" // never on a page
		at, err := h.Store.ListWebhookAttempts(r.Context(), p.WorkspaceID, e.ID, 10)
		if err != nil {
			h.fail(w, r, p, err)
			return
		}
		out = append(out, webhookView{Endpoint: e, Attempts: at})
	}
	h.render(w, r, http.StatusOK, "webhooks", view{Title: "Webhooks", Nav: "webhooks", P: p, Data: out})
}

func (h *dash) enableWebhook(w http.ResponseWriter, r *http.Request, p store.Principal) {
	on := true
	e, err := h.Webhooks.Update(r.Context(), p, r.PathValue("ref"), events.EndpointChange{Enabled: &on})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/webhooks", "The endpoint "+e.URL+" is enabled again.")
}

// redeliver queues an event again by the rule /v1 redeliveries follow (events.Endpoints).
func (h *dash) redeliver(w http.ResponseWriter, r *http.Request, p store.Principal) {
	e, ev, err := h.Webhooks.Redeliver(r.Context(), p, r.PathValue("ref"), r.PostFormValue("event_id"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/webhooks", "The event "+ev.ShortID+" is queued for redelivery to "+e.URL+".")
}
