package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/shortid"
)

// NewEvent is an event to append to the outbox: a type and its snake_case data.
type NewEvent struct {
	Type string
	Data any
}

// Event is a stored event. Envelope is the exact JSON delivered everywhere.
type Event struct {
	WorkspaceID uuid.UUID
	Seq         int64
	ShortID     string
	Type        string
	Envelope    json.RawMessage
	CreatedAt   time.Time
}

// envelope is the wire shape: exactly these keys, in this order.
type envelope struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	WorkspaceID string    `json:"workspace_id"`
	CreatedAt   time.Time `json:"created_at"`
	Data        any       `json:"data"`
}

// AppendEvents writes events to the outbox in the caller's transaction and gives them the
// workspace's next cursors. Taking the cursors locks the workspace row until commit, so one
// workspace's events become visible in cursor order (see migration 0002). Call it last in a
// transaction to hold that lock briefly.
func (t *Tx) AppendEvents(ctx context.Context, workspaceID uuid.UUID, events []NewEvent) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	var last int64
	if err := t.tx.QueryRow(ctx,
		`UPDATE workspaces SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq`,
		workspaceID, len(events)).Scan(&last); err != nil {
		return nil, notFound(err)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	out := make([]Event, len(events))
	rows := make([][]any, len(events))
	for i, e := range events {
		ev := Event{WorkspaceID: workspaceID, Seq: last - int64(len(events)) + int64(i) + 1,
			ShortID: shortid.New(shortid.Event), Type: e.Type, CreatedAt: now}
		body, err := json.Marshal(envelope{ID: ev.ShortID, Type: e.Type, WorkspaceID: workspaceID.String(), CreatedAt: now, Data: e.Data})
		if err != nil {
			return nil, err
		}
		ev.Envelope = body
		out[i] = ev
		rows[i] = []any{workspaceID, ev.Seq, ev.ShortID, ev.Type, string(body), now}
	}
	if _, err := t.tx.CopyFrom(ctx, pgx.Identifier{"events"},
		[]string{"workspace_id", "seq", "short_id", "type", "envelope", "created_at"}, pgx.CopyFromRows(rows)); err != nil {
		return nil, err
	}
	pending := make([][]any, len(out))
	for i, e := range out {
		pending[i] = []any{e.WorkspaceID, e.Seq, e.Type}
	}
	if _, err := t.tx.CopyFrom(ctx, pgx.Identifier{"event_dispatch"}, []string{"workspace_id", "seq", "type"}, pgx.CopyFromRows(pending)); err != nil {
		return nil, err
	}
	return out, t.notify(ctx, out)
}

// EventChannel is the PostgreSQL NOTIFY channel on which committed events are announced.
const EventChannel = "sb_events"

// notifyLimit keeps payloads under PostgreSQL's 8000-byte NOTIFY limit; a larger envelope is
// announced without its body and read from the table by whoever needs it.
const notifyLimit = 7000

// Notice is the payload of an event announcement.
type Notice struct {
	WorkspaceID uuid.UUID       `json:"w"`
	Seq         int64           `json:"s"`
	Type        string          `json:"t"`
	Envelope    json.RawMessage `json:"e,omitempty"`
}

// notify announces the events to every replica's listener. NOTIFY is transactional: the
// announcement is delivered at commit, and never for a rolled-back transaction.
func (t *Tx) notify(ctx context.Context, events []Event) error {
	for _, e := range events {
		n := Notice{WorkspaceID: e.WorkspaceID, Seq: e.Seq, Type: e.Type}
		if len(e.Envelope) <= notifyLimit {
			n.Envelope = e.Envelope
		}
		payload, err := json.Marshal(n)
		if err != nil {
			return err
		}
		if _, err := t.tx.Exec(ctx, `SELECT pg_notify($1, $2)`, EventChannel, string(payload)); err != nil {
			return err
		}
	}
	return nil
}

// Pgx exposes the transaction to the job queue, whose inserts must commit together with the
// store's writes.
func (t *Tx) Pgx() pgx.Tx { return t.tx }

// EventsAfter lists the workspace's events with a cursor above after, oldest first.
func (s *Store) EventsAfter(ctx context.Context, workspaceID uuid.UUID, after int64, limit int) ([]Event, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT workspace_id, seq, short_id, type, envelope, created_at FROM events
		 WHERE workspace_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, workspaceID, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		var body string
		err := r.Scan(&e.WorkspaceID, &e.Seq, &e.ShortID, &e.Type, &body, &e.CreatedAt)
		e.Envelope = json.RawMessage(body)
		return e, err
	})
}

// EventBySeq returns one event of the workspace.
func (s *Store) EventBySeq(ctx context.Context, workspaceID uuid.UUID, seq int64) (Event, error) {
	return s.event(ctx, `seq = $2`, workspaceID, seq)
}

// EventByShortID returns one event of the workspace by its `evt_` id.
func (s *Store) EventByShortID(ctx context.Context, workspaceID uuid.UUID, id string) (Event, error) {
	return s.event(ctx, `short_id = $2`, workspaceID, id)
}

func (s *Store) event(ctx context.Context, cond string, workspaceID uuid.UUID, key any) (Event, error) {
	var e Event
	var body string
	err := s.pool.QueryRow(ctx,
		`SELECT workspace_id, seq, short_id, type, envelope, created_at FROM events WHERE workspace_id = $1 AND `+cond,
		workspaceID, key).Scan(&e.WorkspaceID, &e.Seq, &e.ShortID, &e.Type, &body, &e.CreatedAt)
	e.Envelope = json.RawMessage(body)
	return e, notFound(err)
}

// Dispatch is an event to fan out, with the enabled endpoints of its workspace that
// subscribe to its type.
type Dispatch struct {
	WorkspaceID uuid.UUID
	Seq         int64
	EndpointIDs []uuid.UUID
}

// ClaimUndispatched takes up to limit events not yet fanned out off the dispatch queue
// (skipping those another replica holds), in this transaction. With each it returns the
// endpoints that must receive it. `*` subscribers receive every event, including the
// `meta_response.completed` events outside the public type list.
func (t *Tx) ClaimUndispatched(ctx context.Context, limit int) ([]Dispatch, error) {
	rows, err := t.tx.Query(ctx,
		`WITH claimed AS (
			DELETE FROM event_dispatch WHERE (workspace_id, seq) IN (
				SELECT workspace_id, seq FROM event_dispatch ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			RETURNING workspace_id, seq, type
		)
		SELECT c.workspace_id, c.seq, coalesce(array_agg(w.id) FILTER (WHERE w.id IS NOT NULL), '{}')
		FROM claimed c
		LEFT JOIN webhook_endpoints w ON w.workspace_id = c.workspace_id AND w.enabled
			AND (c.type = ANY (w.event_types) OR '*' = ANY (w.event_types))
		GROUP BY c.workspace_id, c.seq ORDER BY c.workspace_id, c.seq`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Dispatch, error) {
		var d Dispatch
		err := r.Scan(&d.WorkspaceID, &d.Seq, &d.EndpointIDs)
		return d, err
	})
}
