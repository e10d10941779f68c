package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"switchboard/store"
)

// The Events page: the workspace's latest events, rendered on the server, then kept live by
// a small script of this site (static/events.js, the one script of the dashboard) that
// follows /dashboard/events/stream, the event feed of GET /v1/events served to the session
// (server/sessions.go). Without the script the page still shows the latest events, and a
// reload shows newer ones.

// EventsShown is how many of the latest events the page renders.
const EventsShown = 50

type eventRow struct {
	Seq     int64
	ID      string
	Type    string
	Created time.Time
	Data    string // the envelope's data, compact JSON
}

type eventsData struct {
	Events []eventRow
	Cursor int64 // the latest event's seq: the stream starts after it
}

func (h *dash) events(w http.ResponseWriter, r *http.Request, p store.Principal) {
	ctx := r.Context()
	cursors, err := h.Store.EventCursors(ctx, []uuid.UUID{p.WorkspaceID})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	cursor := cursors[p.WorkspaceID]
	evs, err := h.Store.EventsAfter(ctx, p.WorkspaceID, max(0, cursor-EventsShown), EventsShown)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := eventsData{Cursor: cursor}
	for _, e := range evs {
		d.Events = append(d.Events, eventRow{Seq: e.Seq, ID: e.ShortID, Type: e.Type, Created: e.CreatedAt, Data: eventData(e.Envelope)})
		d.Cursor = max(d.Cursor, e.Seq)
	}
	slices.Reverse(d.Events) // newest first
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.render(w, r, http.StatusOK, "events", view{Title: "Events", Nav: "events", P: p, Data: d})
}

// eventData is the `data` of an envelope as compact JSON.
func eventData(envelope []byte) string {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(envelope, &env) != nil || len(env.Data) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, env.Data) != nil {
		return string(env.Data)
	}
	return b.String()
}
