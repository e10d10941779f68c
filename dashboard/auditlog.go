package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/store"
)

// The Audit log page: who did what in the workspace, newest first, with the filters and
// pages of GET /api/audit-log (the same read, audit.Log). Admins and owners only (the audit
// permission), like the route. Days are UTC: `since` is the start of its day, `until` the end
// of its day.

// AuditPageSize is how many entries a page of the Audit log shows.
const AuditPageSize = 50

type auditFilter struct {
	Action, Actor, Target, Since, Until string
}

// query is the filter as a query string, for the next page's link.
func (f auditFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"action": f.Action, "actor": f.Actor, "target": f.Target, "since": f.Since, "until": f.Until} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

type auditRow struct {
	audit.Entry
	SummaryText string // the summary, compact JSON
}

type auditData struct {
	Filter   auditFilter
	Filtered bool
	Actions  []string
	Rows     []auditRow
	Next     string // the next (older) page's URL; empty on the last
	First    string // the first page's URL, when this is another
}

func (h *dash) auditLog(w http.ResponseWriter, r *http.Request, p store.Principal) {
	q := r.URL.Query()
	f := auditFilter{Action: q.Get("action"), Actor: q.Get("actor"), Target: q.Get("target"), Since: q.Get("since"), Until: q.Get("until")}
	d := auditData{Filter: f, Filtered: f != auditFilter{}, Actions: audit.Actions}
	if q.Get("after") != "" {
		d.First = Prefix + "/audit-log?" + f.query().Encode()
	}
	af, err := f.auditFilter()
	if err == nil {
		af.After = q.Get("after")
		var page audit.Page
		if page, err = audit.New(h.Store).List(r.Context(), p.WorkspaceID, af); err == nil {
			for _, e := range page.Data {
				d.Rows = append(d.Rows, auditRow{Entry: e, SummaryText: compactJSON(e.Summary)})
			}
			if page.NextAfter != nil {
				next := f.query()
				next.Set("after", *page.NextAfter)
				d.Next = Prefix + "/audit-log?" + next.Encode()
			}
		}
	}
	status, msg := http.StatusOK, ""
	if err != nil {
		e := apierr.As(err)
		if e == nil {
			h.fail(w, r, p, err)
			return
		}
		status, msg = e.Status(), e.Message
	}
	h.render(w, r, status, "audit", view{Title: "Audit log", Nav: "audit", P: p, Error: msg, Data: d})
}

// auditFilter reads the form's fields into audit's filter: days become instants (UTC).
func (f auditFilter) auditFilter() (audit.Filter, error) {
	af := audit.Filter{Action: f.Action, Actor: f.Actor, Target: f.Target, Limit: AuditPageSize}
	day := func(param, v string, next bool) (*time.Time, error) {
		if v == "" {
			return nil, nil
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return nil, apierr.Invalid(param, "invalid_value", "%s must be a day such as 2026-11-27.", param)
		}
		if next {
			t = t.AddDate(0, 0, 1)
		}
		return &t, nil
	}
	var err error
	if af.Since, err = day("since", f.Since, false); err != nil {
		return af, err
	}
	if af.Until, err = day("until", f.Until, true); err != nil {
		return af, err
	}
	return af, nil
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
