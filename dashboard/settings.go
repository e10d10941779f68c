package dashboard

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/mailer"
	"switchboard/money"
	"switchboard/store"
)

// settingsData is the Settings page: members, the monthly spend cap, and the outbound
// compliance acknowledgment. Everyone signed in sees it; only an owner or admin (the
// settings permission) changes the cap or accepts the acknowledgment.
type settingsData struct {
	Members    []member
	Workspace  store.Workspace
	CapReached bool
	Resets     time.Time
	Version    string
	Text       template.HTML
	Accepted   bool
	Acceptance store.ComplianceAcceptance
	Roles      []string // the roles this user may invite people with
	Invited    *invitation
	MyGrants   []store.OAuthGrant // the MCP clients this person authorized
}

// member is a row of the Members table; Editable when the signed-in person may change its
// role (accounts.SetRole's rules: not oneself, not someone above one's own role).
type member struct {
	store.User
	Editable bool
}

// invitation is the answer to an invite: the link is shown this once (and emailed when a
// mailer is configured).
type invitation struct {
	Email, Role, Link string
	Mailed            bool
	MailError         string
}

func (h *dash) settings(w http.ResponseWriter, r *http.Request, p store.Principal) {
	h.renderSettings(w, r, p, http.StatusOK, "")
}

func (h *dash) renderSettings(w http.ResponseWriter, r *http.Request, p store.Principal, status int, errMsg string) {
	h.renderSettingsWith(w, r, p, status, errMsg, nil)
}

func (h *dash) renderSettingsWith(w http.ResponseWriter, r *http.Request, p store.Principal, status int, errMsg string, inv *invitation) {
	ctx := r.Context()
	ws, err := h.Store.WorkspaceByID(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	users, err := h.Store.ListUsers(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	members := make([]member, len(users))
	for i, u := range users {
		role, _ := access.ParseRole(u.Role)
		members[i] = member{User: u, Editable: p.Access().Allows(access.Settings) && u.ID != p.UserID && role <= p.Access()}
	}
	a, ok, err := h.Compliance.Acceptance(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := settingsData{Members: members, Workspace: ws, CapReached: store.CapReached(ws.MonthlyCapNanoUSD, ws.MonthSpendNanoUSD),
		Resets: store.NextMonth(time.Now()), Version: h.Compliance.Version(), Text: renderText(h.Compliance.Text()), Accepted: ok, Acceptance: a, Invited: inv}
	grants, err := h.Store.ListOAuthGrants(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	for _, g := range grants {
		if g.UserID == p.UserID {
			d.MyGrants = append(d.MyGrants, g)
		}
	}
	for _, role := range access.Names() {
		if rr, _ := access.ParseRole(role); rr <= p.Access() {
			d.Roles = append(d.Roles, role)
		}
	}
	h.render(w, r, status, "settings", view{Title: "Settings", Nav: "settings", P: p, Error: errMsg, Data: d})
}

// setCap sets the monthly spend cap from the form's `cap_usd`; the `clear` button removes it.
func (h *dash) setCap(w http.ResponseWriter, r *http.Request, p store.Principal) {
	var capNano *int64
	if r.PostFormValue("clear") == "" {
		nano, err := money.ParseUSD(strings.TrimPrefix(strings.TrimSpace(r.PostFormValue("cap_usd")), "$"))
		if err != nil || nano <= 0 {
			h.renderSettings(w, r, p, http.StatusBadRequest, "The monthly spend cap must be a dollar amount above zero, such as 250 or 99.50.")
			return
		}
		capNano = &nano
	}
	var ws store.Workspace
	err := h.Store.InTx(r.Context(), func(tx *store.Tx) error {
		var err error
		if ws, err = tx.SetMonthlyCapByID(r.Context(), p.WorkspaceID, capNano); err != nil {
			return err
		}
		return audit.Record(r.Context(), tx, p.WorkspaceID, audit.CapChanged, "workspace", p.WorkspaceID.String(), map[string]any{"monthly_cap_nano_usd": capNano})
	})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	msg := "The monthly spend cap is removed."
	if capNano != nil {
		// The cap as typed, to the digit; the spend as money reads.
		msg = "The monthly spend cap is " + usdExact(*capNano) + "; " + usd(ws.MonthSpendNanoUSD) + " is spent this month."
	}
	h.flash(w, r, Prefix+"/settings", msg)
}

// acceptCompliance records the signed-in owner's or admin's acceptance of the current
// version. The form's checkbox must be ticked: accepting is a deliberate act.
func (h *dash) acceptCompliance(w http.ResponseWriter, r *http.Request, p store.Principal) {
	if got := r.PostFormValue("version"); got != h.Compliance.Version() {
		h.fail(w, r, p, apierr.Conflict("compliance_version_changed",
			"The acknowledgment changed to version %s while the page was open; read it again before accepting.", h.Compliance.Version()))
		return
	}
	if r.PostFormValue("agree") == "" {
		h.renderSettings(w, r, p, http.StatusBadRequest, "Tick the box to confirm that you have read the acknowledgment.")
		return
	}
	a, err := h.Compliance.Accept(r.Context(), p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/settings", "The outbound compliance acknowledgment "+a.Version+" is accepted by "+a.UserEmail+".")
}

var (
	boldText = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	listItem = regexp.MustCompile(`^\d+\.\s+`)
)

// renderText renders the acknowledgment's markdown as the little it uses: a title, paragraphs,
// a numbered list and bold text. The text comes from the binary, never from a user, and is
// escaped before the markup is added.
func renderText(md string) template.HTML {
	var b strings.Builder
	inList := false
	for _, line := range strings.Split(md, "\n") {
		line = strings.TrimSpace(line)
		text := boldText.ReplaceAllString(template.HTMLEscapeString(line), "<strong>$1</strong>")
		isItem := listItem.MatchString(line)
		if inList && !isItem {
			b.WriteString("</ol>\n")
			inList = false
		}
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			b.WriteString("<h3>" + strings.TrimPrefix(text, "# ") + "</h3>\n")
		case isItem:
			if !inList {
				b.WriteString("<ol>\n")
				inList = true
			}
			b.WriteString("<li>" + listItem.ReplaceAllString(text, "") + "</li>\n")
		default:
			b.WriteString("<p>" + text + "</p>\n")
		}
	}
	if inList {
		b.WriteString("</ol>\n")
	}
	return template.HTML(b.String()) //nolint:gosec // escaped above; the text is the repository's own
}

// invite makes a user of the workspace from the form's email and role (not above the
// inviter's own), shows the one-time link, and emails it when a mailer is configured.
func (h *dash) invite(w http.ResponseWriter, r *http.Request, p store.Principal) {
	email, role := r.PostFormValue("email"), r.PostFormValue("role")
	u, link, err := h.Accounts.Invite(r.Context(), p, email, role)
	if e := apierr.As(err); e != nil {
		h.renderSettings(w, r, p, e.Status(), e.Message)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	inv := &invitation{Email: u.Email, Role: u.Role, Link: link}
	if h.Mailer != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		err := h.Mailer.Send(ctx, mailer.Message{To: []string{u.Email},
			Subject: fmt.Sprintf("You are invited to the Switchboard workspace %s", p.WorkspaceName),
			Body: fmt.Sprintf("%s invited you to the Switchboard workspace %s as %s.\n\nSet your password and sign in here (the link works once, for %s):\n\n%s\n\nIf you did not expect this, ignore this message.\n",
				p.UserEmail, p.WorkspaceName, u.Role, h.Accounts.SetPasswordTTL().Round(time.Hour), link)})
		if err != nil {
			h.Log.Warn("invitation email", "error", err)
			inv.MailError = "The email could not be sent; give the link to " + u.Email + " yourself."
		} else {
			inv.Mailed = true
		}
	}
	h.renderSettingsWith(w, r, p, http.StatusOK, "", inv)
}

// setRole changes a member's role from the Members table's form (accounts.SetRole: recorded
// in the audit log).
func (h *dash) setRole(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, &store.NotFoundError{What: "member"})
		return
	}
	u, err := h.Accounts.SetRole(r.Context(), p, id, r.PostFormValue("role"))
	if e := apierr.As(err); e != nil {
		h.renderSettings(w, r, p, e.Status(), e.Message)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/settings", u.Email+" is now "+u.Role+".")
}
