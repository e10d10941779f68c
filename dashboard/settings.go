package dashboard

import (
	"html/template"
	"net/http"
	"regexp"
	"strings"
	"time"

	"switchboard/apierr"
	"switchboard/money"
	"switchboard/store"
)

// settingsData is the Settings page: members, the monthly spend cap, and the outbound
// compliance acknowledgment. Everyone signed in sees it; only an owner or admin (the
// settings permission) changes the cap or accepts the acknowledgment.
type settingsData struct {
	Members    []store.User
	Workspace  store.Workspace
	CapReached bool
	Resets     time.Time
	Version    string
	Text       template.HTML
	Accepted   bool
	Acceptance store.ComplianceAcceptance
}

func (h *dash) settings(w http.ResponseWriter, r *http.Request, p store.Principal) {
	h.renderSettings(w, r, p, http.StatusOK, "")
}

func (h *dash) renderSettings(w http.ResponseWriter, r *http.Request, p store.Principal, status int, errMsg string) {
	ctx := r.Context()
	ws, err := h.Store.WorkspaceByID(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	members, err := h.Store.ListUsers(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	a, ok, err := h.Compliance.Acceptance(ctx, p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := settingsData{Members: members, Workspace: ws, CapReached: store.CapReached(ws.MonthlyCapNanoUSD, ws.MonthSpendNanoUSD),
		Resets: store.NextMonth(time.Now()), Version: h.Compliance.Version(), Text: renderText(h.Compliance.Text()), Accepted: ok, Acceptance: a}
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
	ws, err := h.Store.SetMonthlyCapByID(r.Context(), p.WorkspaceID, capNano)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	msg := "The monthly spend cap is removed."
	if capNano != nil {
		msg = "The monthly spend cap is $" + money.FormatUSD(*capNano) + "; $" + money.FormatUSD(ws.MonthSpendNanoUSD) + " is spent this month."
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
