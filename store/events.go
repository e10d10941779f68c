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
// workspace's next cursors. See Settle.
func (t *Tx) AppendEvents(ctx context.Context, workspaceID uuid.UUID, events []NewEvent) ([]Event, error) {
	if len(events) == 0 {
		return nil, nil
	}
	_, out, err := t.Settle(ctx, workspaceID, nil, func(int64) []NewEvent { return events })
	return out, err
}

// Settle ends a transaction's work on a workspace: it charges the workspace (when charge is
// not nil), then appends the events that build returns, given the balance after the charge.
// The events are announced after the commit (Store.InTx).
//
// The workspace row is locked from here until commit: that lock is what makes one
// workspace's event cursors become visible in the order they were assigned (see migration
// 0002), and it serializes that workspace's commits. So Settle comes last, and it holds the
// lock for two round trips only: one UPDATE that takes the lock and reads the balance and
// cursor, then one pipelined batch with the cursor update, the ledger row, the events and
// their dispatch rows.
func (t *Tx) Settle(ctx context.Context, workspaceID uuid.UUID, charge *Charge, build func(balanceAfter int64) []NewEvent) (int64, []Event, error) {
	var cost int64
	if charge != nil {
		cost = charge.AmountNanoUSD
	}
	var balance, seq int64
	if err := t.tx.QueryRow(ctx,
		`UPDATE workspaces SET balance_nano_usd = balance_nano_usd - $2, updated_at = now()
		 WHERE id = $1 RETURNING balance_nano_usd, event_seq`, workspaceID, cost).Scan(&balance, &seq); err != nil {
		return 0, nil, notFound(err)
	}
	events, err := envelopes(workspaceID, seq, build(balance))
	if err != nil {
		return 0, nil, err
	}
	batch := &pgx.Batch{}
	if charge != nil {
		batch.Queue(`INSERT INTO ledger (workspace_id, amount_nano_usd, balance_after, category, model, input_tokens, output_tokens, conversation_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			workspaceID, -charge.AmountNanoUSD, balance, charge.Category, charge.Model, charge.InputTokens, charge.OutputTokens, charge.ConversationID)
	}
	if len(events) > 0 {
		queueEvents(batch, workspaceID, seq+int64(len(events)), events)
		for _, e := range events {
			t.notices = append(t.notices, notice(e))
		}
	}
	if err := t.tx.SendBatch(ctx, batch).Close(); err != nil {
		return 0, nil, err
	}
	return balance, events, nil
}

// envelopes gives the events their cursors (after seq), ids and envelopes.
func envelopes(workspaceID uuid.UUID, seq int64, events []NewEvent) ([]Event, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	out := make([]Event, len(events))
	for i, e := range events {
		ev := Event{WorkspaceID: workspaceID, Seq: seq + int64(i) + 1, ShortID: shortid.New(shortid.Event), Type: e.Type, CreatedAt: now}
		body, err := json.Marshal(envelope{ID: ev.ShortID, Type: e.Type, WorkspaceID: workspaceID.String(), CreatedAt: now, Data: e.Data})
		if err != nil {
			return nil, err
		}
		ev.Envelope = body
		out[i] = ev
	}
	return out, nil
}

// queueEvents queues the statements that store events and their dispatch rows.
func queueEvents(batch *pgx.Batch, workspaceID uuid.UUID, lastSeq int64, events []Event) {
	n := len(events)
	seqs, ids, types, bodies := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		seqs[i], ids[i], types[i], bodies[i] = e.Seq, e.ShortID, e.Type, string(e.Envelope)
	}
	created := events[0].CreatedAt
	batch.Queue(`UPDATE workspaces SET event_seq = $2 WHERE id = $1`, workspaceID, lastSeq)
	batch.Queue(`INSERT INTO events (workspace_id, seq, short_id, type, envelope, created_at)
		SELECT $1, s, i, t, b, $6 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[]) AS u(s, i, t, b)`,
		workspaceID, seqs, ids, types, bodies, created)
	batch.Queue(`INSERT INTO event_dispatch (workspace_id, seq, type) SELECT $1, s, t FROM unnest($2::bigint[], $3::text[]) AS u(s, t)`,
		workspaceID, seqs, types)
}

// EventCursors returns the current cursor of each given workspace.
func (s *Store) EventCursors(ctx context.Context, workspaceIDs []uuid.UUID) (map[uuid.UUID]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, event_seq FROM workspaces WHERE id = ANY($1)`, workspaceIDs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[uuid.UUID]int64{}
	for rows.Next() {
		var id uuid.UUID
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, err
		}
		out[id] = seq
	}
	return out, rows.Err()
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

// notice is the announcement payload of an event.
func notice(e Event) string {
	n := Notice{WorkspaceID: e.WorkspaceID, Seq: e.Seq, Type: e.Type}
	if len(e.Envelope) <= notifyLimit {
		n.Envelope = e.Envelope
	}
	payload, _ := json.Marshal(n) // plain types and valid JSON: cannot fail
	return string(payload)
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
