package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/inbox"
	"switchboard/store"
)

// The Inbox page: the team inbox (package inbox) for people. On the left the queue in three
// views (waiting: escalated and nobody holds it; mine: the escalated conversations the
// signed-in person holds; all escalated), on the right the conversation picked with
// ?c=<mc- id> (the link of the unclaimed-conversation email): the escalation summary and
// trigger, the contact, the labels, the transcript (visitor, agent, people by name,
// notices), the notes, and, for members and above (access.Inbox), the forms to claim,
// reply, note, release and close. Each form posts to /dashboard/inbox/{ref}/{action}, which
// calls the inbox service and redirects back with a flash (post, redirect, get); a refusal
// is shown above the forms, and a refused reply or note keeps its text. A small script of
// this site (static/inbox.js) follows the session's event feed and, on a turn or a new
// conversation, fetches the page again and swaps the queue and the conversation in place.

// inboxCSP is the dashboard's policy plus this site's script and its fetches (the event feed
// and the page itself).
const inboxCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// inboxView is one of the queue's views.
type inboxView struct {
	Key, Label string
	// Status and Assignee are the inbox.Filter of the view.
	Status, Assignee string
}

var inboxViews = []inboxView{
	{Key: "waiting", Label: "Waiting", Status: "escalated", Assignee: "none"},
	{Key: "mine", Label: "Mine", Status: "escalated", Assignee: "me"},
	{Key: "all", Label: "All escalated", Status: "escalated"},
}

// InboxShown is how many conversations a view of the queue lists.
const InboxShown = 100

// inboxRow is a conversation of the queue.
type inboxRow struct {
	inbox.Summary
	Href     string
	Who      string // the contact's name, email or phone, or "Visitor"
	Waited   string // how long since it escalated ("4 min"); empty when not escalated
	Selected bool
}

// inboxThread is the conversation picked.
type inboxThread struct {
	inbox.Detail
	Who           string
	Mine          bool   // the signed-in person holds it
	HolderName    string // who holds it, when someone does
	Closed        bool
	CanRelease    bool // escalated or held, and there is an agent to hand it back to
	Waited        string
	EscalatedWhen *time.Time
}

// inboxTab is a view of the queue as the page links it.
type inboxTab struct {
	Label, Href string
	Current     bool
}

type inboxData struct {
	View   string
	Tabs   []inboxTab
	Rows   []inboxRow
	Thread *inboxThread
	Ref    string // the ?c= asked for
	CanAct bool   // access.Inbox
	Me     *inbox.Me
	Cursor int64 // the event feed's cursor: the live script follows from there
	Error  string
	Reply  string // a refused reply's text, given back
	Note   string // a refused note's text, given back
	Self   string // this page's path with its view and conversation
}

// Session keys of a refused action, shown by the next page.
const (
	inboxErrorKey = "inbox_error"
	inboxReplyKey = "inbox_reply"
	inboxNoteKey  = "inbox_note"
)

func (h *dash) inboxPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	ctx := r.Context()
	actor, err := h.Inbox.ActorOf(ctx, p.WorkspaceID, p.UserID, p.WorkspaceName)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := inboxData{View: r.URL.Query().Get("view"), Ref: r.URL.Query().Get("c"),
		CanAct: p.Access().Allows(access.Inbox)}
	shown := inboxViews[0]
	for _, v := range inboxViews {
		if v.Key == d.View {
			shown = v
		}
	}
	d.View = shown.Key
	for _, v := range inboxViews {
		d.Tabs = append(d.Tabs, inboxTab{Label: v.Label, Href: inboxPath(v.Key, d.Ref), Current: v.Key == d.View})
	}
	d.Self = inboxPath(d.View, d.Ref)
	sessions := h.Accounts.Sessions()
	d.Error = sessions.PopString(ctx, inboxErrorKey)
	d.Reply = sessions.PopString(ctx, inboxReplyKey)
	d.Note = sessions.PopString(ctx, inboxNoteKey)

	cursors, err := h.Store.EventCursors(ctx, []uuid.UUID{p.WorkspaceID})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d.Cursor = cursors[p.WorkspaceID] // read before the queue: the feed then misses nothing
	page, err := h.Inbox.List(ctx, p.WorkspaceID, actor, inbox.Filter{Status: shown.Status, Assignee: shown.Assignee, Limit: InboxShown})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	now := time.Now()
	for _, s := range page.Data {
		d.Rows = append(d.Rows, inboxRow{Summary: s, Href: inboxPath(d.View, s.ID) + "#conversation", Who: who(s.Contact), Waited: waited(s.EscalatedAt, now), Selected: s.ID == d.Ref})
	}
	status := http.StatusOK
	if d.Ref != "" {
		det, err := h.Inbox.Get(ctx, p.WorkspaceID, d.Ref)
		if e := apierr.As(err); err != nil && e == nil {
			h.fail(w, r, p, err)
			return
		} else if err != nil {
			status = e.Status()
			d.Error = "No conversation " + d.Ref + " in this workspace's inbox."
			if status != http.StatusNotFound {
				d.Error = e.Message
			}
		} else {
			d.Thread = threadOf(det, actor, now)
		}
	}
	if actor.Person() && d.CanAct {
		set, err := h.Inbox.Settings(ctx, p.WorkspaceID, actor)
		if err != nil {
			h.fail(w, r, p, err)
			return
		}
		d.Me = set.Me
	}
	title := "Inbox"
	if d.Thread != nil {
		title = "Inbox: " + d.Thread.Who
	}
	w.Header().Set("Content-Security-Policy", inboxCSP)
	h.render(w, r, status, "inbox", view{Title: title, Nav: "inbox", P: p, Data: d})
}

func threadOf(det inbox.Detail, actor inbox.Actor, now time.Time) *inboxThread {
	t := &inboxThread{Detail: det, Who: who(det.Contact), Closed: det.Status == "closed", Waited: waited(det.EscalatedAt, now)}
	if det.Assignee != nil {
		t.HolderName = det.Assignee.Name
		t.Mine = actor.Person() && det.Assignee.ID != nil && *det.Assignee.ID == actor.UserID
	}
	t.CanRelease = det.CanRelease()
	if det.Escalation != nil {
		t.EscalatedWhen = det.Escalation.EscalatedAt
	}
	return t
}

// who names the other side of a conversation.
func who(c *inbox.Contact) string {
	if c != nil {
		for _, s := range []*string{c.Name, c.Email, c.Phone} {
			if s != nil && *s != "" {
				return *s
			}
		}
	}
	return "Visitor"
}

// waited is how long ago since was, in words short enough for a list ("45 s", "4 min",
// "2 h 5 min", "3 d").
func waited(since *time.Time, now time.Time) string {
	if since == nil {
		return ""
	}
	d := now.Sub(*since)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d d", int(d.Hours())/24)
}

// inboxPath is the Inbox page showing view and, when ref is set, that conversation.
func inboxPath(view, ref string) string {
	q := url.Values{}
	if view != "" && view != inboxViews[0].Key {
		q.Set("view", view)
	}
	if ref != "" {
		q.Set("c", ref)
	}
	if len(q) == 0 {
		return Prefix + "/inbox"
	}
	return Prefix + "/inbox?" + q.Encode()
}

// inboxAct runs one action of the forms and goes back to the conversation, with what
// happened as a flash or what went wrong above the forms.
func (h *dash) inboxAct(act func(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, r *http.Request) (string, error)) pageFunc {
	return func(w http.ResponseWriter, r *http.Request, p store.Principal) {
		ctx := r.Context()
		ref := r.PathValue("ref")
		view := r.FormValue("view")
		back := inboxPath(view, ref) + "#conversation"
		actor, err := h.Inbox.ActorOf(ctx, p.WorkspaceID, p.UserID, p.WorkspaceName)
		if err != nil {
			h.fail(w, r, p, err)
			return
		}
		msg, err := act(ctx, p, actor, ref, r)
		if err != nil {
			e := apierr.As(err)
			if e == nil {
				h.fail(w, r, p, err)
				return
			}
			h.Accounts.Sessions().Put(ctx, inboxErrorKey, e.Message)
			http.Redirect(w, r, back, http.StatusSeeOther)
			return
		}
		h.flash(w, r, back, msg)
	}
}

func (h *dash) inboxAssign(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, _ *http.Request) (string, error) {
	me := "me"
	if _, err := h.Inbox.Assign(ctx, p.WorkspaceID, ref, actor, &me); err != nil {
		return "", err
	}
	return "You hold the conversation " + ref + " now: the agent stays silent until you release it.", nil
}

func (h *dash) inboxReply(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, r *http.Request) (string, error) {
	text := r.FormValue("text")
	if _, err := h.Inbox.Reply(ctx, p.WorkspaceID, ref, actor, text); err != nil {
		h.Accounts.Sessions().Put(ctx, inboxReplyKey, text)
		return "", err
	}
	return "Your reply is sent.", nil
}

func (h *dash) inboxNote(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, r *http.Request) (string, error) {
	text := r.FormValue("text")
	if _, err := h.Inbox.AddNote(ctx, p.WorkspaceID, ref, actor, text); err != nil {
		h.Accounts.Sessions().Put(ctx, inboxNoteKey, text)
		return "", err
	}
	return "Your note is saved; only the team sees it.", nil
}

func (h *dash) inboxRelease(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, _ *http.Request) (string, error) {
	if _, err := h.Inbox.Release(ctx, p.WorkspaceID, ref, actor); err != nil {
		return "", err
	}
	return "The conversation " + ref + " is back with its agent: it answers the next message.", nil
}

func (h *dash) inboxClose(ctx context.Context, p store.Principal, actor inbox.Actor, ref string, _ *http.Request) (string, error) {
	if _, err := h.Inbox.Close(ctx, p.WorkspaceID, ref, actor); err != nil {
		return "", err
	}
	return "The conversation " + ref + " is closed.", nil
}

// inboxMine saves the signed-in person's display name and email opt-in.
func (h *dash) inboxMine(w http.ResponseWriter, r *http.Request, p store.Principal) {
	ctx := r.Context()
	back := inboxPath(r.FormValue("view"), r.FormValue("c")) + "#preferences"
	actor, err := h.Inbox.ActorOf(ctx, p.WorkspaceID, p.UserID, p.WorkspaceName)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	name := r.FormValue("name")
	notify := r.FormValue("notify_unclaimed") == "on"
	set, err := h.Inbox.SetMine(ctx, p.WorkspaceID, actor, &name, &notify)
	if err != nil {
		if apierr.As(err) == nil {
			h.fail(w, r, p, err)
			return
		}
		h.Accounts.Sessions().Put(ctx, inboxErrorKey, apierr.As(err).Message)
		http.Redirect(w, r, back, http.StatusSeeOther)
		return
	}
	msg := "Saved: visitors see you as " + set.Me.Name + "; "
	if set.Me.NotifyUnclaimed {
		msg += "you get an email when a conversation waits unclaimed."
	} else {
		msg += "no emails about unclaimed conversations."
	}
	h.flash(w, r, back, msg)
}

// waitingCount is the navigation's count of waiting conversations (0 when unknown).
func (h *dash) waitingCount(ctx context.Context, p store.Principal) int64 {
	if h.Inbox == nil {
		return 0
	}
	n, err := h.Inbox.Waiting(ctx, p.WorkspaceID)
	if err != nil {
		h.Log.Warn("dashboard: waiting conversations", "error", err)
		return 0
	}
	return n
}
