package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/events"
	"switchboard/gen/v1api"
	"switchboard/store"
)

// publicEventTypes are the types a feed may filter on.
var publicEventTypes = map[string]bool{
	"conversation.created": true, "turn.completed": true, "confirmation.requested": true,
	"confirmation.resolved": true, "spend.recorded": true, "run.completed": true,
}

// StreamEvents serves GET /v1/events: the durable events after the cursor, then live ones.
// `Last-Event-ID` wins over `after` (a reconnecting EventSource repeats its original URL).
func (h *v1Handlers) StreamEvents(ctx context.Context, req v1api.StreamEventsRequestObject) (v1api.StreamEventsResponseObject, error) {
	p, _ := principalFrom(ctx)
	var cursor int64
	if req.Params.After != nil {
		cursor = *req.Params.After
	}
	if last := req.Params.LastEventID; last != nil && strings.TrimSpace(*last) != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(*last), 10, 64)
		if err != nil || n < 0 {
			return nil, apierr.Invalid("Last-Event-ID", "invalid_parameter", "Last-Event-ID must be a cursor: a non-negative integer from an `id:` line.")
		}
		cursor = n
	}
	var filter map[string]bool
	if req.Params.Types != nil {
		filter = map[string]bool{}
		for _, t := range strings.Split(*req.Params.Types, ",") {
			t = strings.TrimSpace(t)
			if !publicEventTypes[t] {
				return nil, apierr.Invalid("types", "invalid_parameter", "Unknown event type %q.", t)
			}
			filter[t] = true
		}
	}
	return &eventFeed{ctx: ctx, store: h.s.store, hub: h.s.hub, ping: h.s.cfg.SSEPingInterval,
		workspace: p.WorkspaceID, cursor: cursor, filter: filter}, nil
}

// eventFeed writes the stream. It subscribes before it replays, so nothing committed at the
// seam is missed, and it drops events at or below its cursor, so nothing is sent twice. Like
// every stream it implements the generated Visit itself: the generated text/event-stream
// response copies a finished io.Reader, while a feed writes and flushes as events happen.
type eventFeed struct {
	ctx       context.Context
	store     *store.Store
	hub       *events.Hub
	ping      time.Duration
	workspace uuid.UUID
	cursor    int64
	filter    map[string]bool // nil: every event, `meta_response.completed` included
	out       *sseWriter
	// generic sends every frame as `event: message` (the type is in the envelope), for the
	// dashboard's page, whose EventSource then needs no listener per type.
	generic bool
}

const replayPage = 500

func (f *eventFeed) VisitStreamEventsResponse(w http.ResponseWriter) error {
	sub := f.hub.Subscribe(f.workspace)
	defer sub.Close()
	f.out = &sseWriter{w: w}
	f.out.start()
	if err := f.replay(); err != nil {
		return err
	}
	ping := time.NewTicker(f.ping)
	defer ping.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return nil
		case <-f.hub.Closing():
			return nil // the server is shutting down; the client resumes with Last-Event-ID
		case e := <-sub.C:
			if err := f.handed(e); err != nil {
				return err
			}
		case <-sub.Lagged:
			if err := f.replay(); err != nil {
				return err
			}
		case <-ping.C:
			if err := f.out.comment("ping"); err != nil {
				return err
			}
		}
	}
}

// handed sends an event the hub handed over when it is the next one; after a gap the feed
// reads the table.
func (f *eventFeed) handed(e store.Event) error {
	if e.Seq <= f.cursor {
		return nil
	}
	if e.Seq != f.cursor+1 {
		return f.replay()
	}
	return f.send(e)
}

func (f *eventFeed) replay() error {
	for {
		page, err := f.store.EventsAfter(f.ctx, f.workspace, f.cursor, replayPage)
		if err != nil {
			if f.ctx.Err() != nil {
				return nil //nolint:nilerr // the client left or the server drains: the feed simply ends
			}
			return err
		}
		for _, e := range page {
			if err := f.send(e); err != nil {
				return err
			}
		}
		if len(page) < replayPage {
			return nil
		}
	}
}

func (f *eventFeed) send(e store.Event) error {
	f.cursor = e.Seq
	if f.filter != nil && !f.filter[e.Type] {
		return nil
	}
	name := e.Type
	if f.generic {
		name = "message"
	}
	return f.out.frame(strconv.FormatInt(e.Seq, 10), name, e.Envelope)
}
