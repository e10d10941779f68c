package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/jsonappend"
	"switchboard/shortid"
	"switchboard/store/internal/dbsqlc"
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

// envelope is the wire shape: exactly these keys, in this order. marshalEnvelope writes it.
type envelope struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	WorkspaceID string    `json:"workspace_id"`
	CreatedAt   time.Time `json:"created_at"`
	Data        any       `json:"data"`
}

// marshalEnvelope is json.Marshal of ev's envelope with data, byte for byte, without
// reflecting on the envelope itself (only data goes through encoding/json): under load the
// write-behind flush builds two envelopes per ephemeral turn.
func marshalEnvelope(ev Event, data any) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	b := appendEnvelopeHead(make([]byte, 0, envelopeHeadMax+len(raw)+1), ev)
	return append(append(b, raw...), '}'), nil
}

// envelopeHeadMax is about the longest head appendEnvelopeHead writes for a plain type.
const envelopeHeadMax = 160

// appendEnvelopeHead appends ev's envelope up to its data: `{"id":...,"data":`. The time is
// written as time.Time's MarshalJSON writes it (RFC 3339 with nanoseconds, trailing zeros
// dropped), the strings as encoding/json escapes them.
func appendEnvelopeHead(b []byte, ev Event) []byte {
	b = append(b, `{"id":`...)
	b = jsonappend.String(b, ev.ShortID)
	b = append(b, `,"type":`...)
	b = jsonappend.String(b, ev.Type)
	b = append(b, `,"workspace_id":"`...)
	b = appendUUID(b, ev.WorkspaceID)
	b = append(b, `","created_at":"`...)
	b = ev.CreatedAt.AppendFormat(b, time.RFC3339Nano)
	return append(b, `","data":`...)
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

// AppendEvents on the pool appends the events in a transaction of their own.
func (s *Store) AppendEvents(ctx context.Context, workspaceID uuid.UUID, events []NewEvent) (out []Event, err error) {
	err = s.InTx(ctx, func(t *Tx) error {
		out, err = t.AppendEvents(ctx, workspaceID, events)
		return err
	})
	return out, err
}

// Settle on the pool settles in a transaction of its own; the events are announced after
// its commit.
func (s *Store) Settle(ctx context.Context, workspaceID uuid.UUID, charge *Charge, build func(balanceAfter int64) []NewEvent) (balance int64, out []Event, err error) {
	err = s.InTx(ctx, func(t *Tx) error {
		balance, out, err = t.Settle(ctx, workspaceID, charge, build)
		return err
	})
	return balance, out, err
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
	locked, err := t.sql.LockWorkspaceForSettle(ctx, t.db, dbsqlc.LockWorkspaceForSettleParams{ID: workspaceID, Cost: cost})
	if err != nil {
		return 0, nil, notFound("workspace", err)
	}
	balance, seq := locked.BalanceNanoUSD, locked.EventSeq
	if cost > 0 && (balance <= 0 && balance+cost > 0 ||
		CapReached(locked.MonthlyCapNanoUSD, locked.MonthSpendNanoUSD) && !CapReached(locked.MonthlyCapNanoUSD, locked.MonthSpendNanoUSD-cost)) {
		// This charge stopped the workspace: replicas that cached its keys must read it again.
		t.moneyChanged = append(t.moneyChanged, workspaceID)
	}
	events, err := envelopes(workspaceID, seq, build(balance))
	if err != nil {
		return 0, nil, err
	}
	batch := &pgx.Batch{}
	if err := t.queueSettle(ctx, batchQueue{batch}, workspaceID, balance, charge, events); err != nil {
		return 0, nil, err
	}
	if len(events) > 0 {
		t.notices = append(t.notices, Notice{WorkspaceID: workspaceID, First: events[0].Seq, Last: events[len(events)-1].Seq})
	}
	if err := t.db.SendBatch(ctx, batch).Close(); err != nil {
		return 0, nil, err
	}
	return balance, events, nil
}

// Settlement is one charge (none when Charge is nil) and the events that go with it, for
// SettleMany. An event whose Data is an AfterCharge carries the workspace's balance right
// after this charge.
type Settlement struct {
	Charge *Charge
	Events []NewEvent
}

// AfterCharge is the data of an event that reports the workspace's balance right after its
// settlement's charge (spend.recorded's balance_usd), for SettleMany: the data is Head, the
// balance in USD as a JSON number (money.FormatUSD's text), then Tail. The balance is known
// only once the database has taken the workspace's lock, and SettleMany has the database
// write it in (format_usd, migration 0022), in the statement that takes the lock.
type AfterCharge struct{ Head, Tail string }

// SettleMany is Settle for several settlements of one workspace at once (the group commit,
// the write-behind flush): one workspace-row update for their total, one cursor range for
// all their events, every ledger row and event, in one statement (SettleWorkspace). Each
// ledger row and AfterCharge event carries the balance after its own charge, as if they had
// been settled one by one in order.
//
// Nothing is read back before the transaction goes on: in a pipelined transaction the
// statement travels with COMMIT, so the workspace's row is locked only while PostgreSQL
// writes the batch and commits it, not while a round trip to this process and its goroutine
// wait their turn for the CPU (every other batch of the workspace waits that long). The
// events' cursors, the announcements and the revocations are filled in as the row comes;
// a workspace that is gone fails the transaction as not found.
func (t *Tx) SettleMany(ctx context.Context, workspaceID uuid.UUID, items []Settlement) error {
	batch := &pgx.Batch{}
	if err := t.queueSettleMany(batch, workspaceID, items); err != nil {
		return err
	}
	return t.db.SendBatch(ctx, batch).Close()
}

func totalOf(items []Settlement) int64 {
	var total int64
	for _, it := range items {
		if it.Charge != nil {
			total += it.Charge.AmountNanoUSD
		}
	}
	return total
}

// queueSettleMany queues SettleMany's statement in batch.
func (t *Tx) queueSettleMany(batch *pgx.Batch, workspaceID uuid.UUID, items []Settlement) error {
	total := totalOf(items)
	p := settleParams(items)
	p.ID, p.Cost, p.CreatedAt = workspaceID, total, time.Now().UTC().Truncate(time.Microsecond)
	after := total // the charges after the current one: its balance is the batch's plus this
	for _, it := range items {
		if c := it.Charge; c != nil {
			after -= c.AmountNanoUSD
			addSettledLedgerRow(&p, c, after)
		}
		for _, e := range it.Events {
			if err := addSettledEvent(&p, workspaceID, e, after); err != nil {
				return err
			}
		}
	}
	p.EventCount = int64(len(p.EventNumbers))
	return queueRow(batch, func(db dbsqlc.DBTX, got bool) error {
		row, err := t.sql.SettleWorkspace(context.Background(), db, p) // queueRow's DBTXs use no context
		if !got || err != nil {
			return notFound("workspace", err)
		}
		t.settled(workspaceID, total, row, p.EventCount)
		return nil
	})
}

// settleParams are SettleWorkspace's parameters with room for the rows of items: a flush
// under load settles a few hundred, and growing fifteen arrays to that size one doubling at a
// time cost it about a hundred allocations.
func settleParams(items []Settlement) dbsqlc.SettleWorkspaceParams {
	var charges, events int
	for _, it := range items {
		if it.Charge != nil {
			charges++
		}
		events += len(it.Events)
	}
	return dbsqlc.SettleWorkspaceParams{
		LedgerIds: make([]uuid.UUID, 0, charges), Amounts: make([]int64, 0, charges), BalanceOffsets: make([]int64, 0, charges),
		Categories: make([]string, 0, charges), Models: make([]string, 0, charges), InputTokens: make([]int64, 0, charges),
		OutputTokens: make([]int64, 0, charges), ConversationIds: make([]uuid.UUID, 0, charges),
		EventNumbers: make([]int64, 0, events), EventShortIds: make([]string, 0, events), EventTypes: make([]string, 0, events),
		EnvelopeHeads: make([]string, 0, events), EnvelopeTails: make([]string, 0, events), HasBalance: make([]bool, 0, events),
		EventBalanceOffsets: make([]int64, 0, events),
	}
}

// addSettledLedgerRow adds the ledger row of charge c to p, after which the batch still
// charges after.
func addSettledLedgerRow(p *dbsqlc.SettleWorkspaceParams, c *Charge, after int64) {
	var conversation uuid.UUID // the zero UUID: none (SettleWorkspace)
	if c.ConversationID != nil {
		conversation = *c.ConversationID
	}
	p.LedgerIds, p.ConversationIds = append(p.LedgerIds, newRowID()), append(p.ConversationIds, conversation)
	p.Amounts, p.BalanceOffsets = append(p.Amounts, -c.AmountNanoUSD), append(p.BalanceOffsets, after)
	p.Categories, p.Models = append(p.Categories, c.Category), append(p.Models, c.Model)
	p.InputTokens, p.OutputTokens = append(p.InputTokens, c.InputTokens), append(p.OutputTokens, c.OutputTokens)
}

// addSettledEvent adds e to p: its envelope, or for an AfterCharge event the head and tail
// around the balance, which the database writes in. after is what the batch charges after
// e's charge.
func addSettledEvent(p *dbsqlc.SettleWorkspaceParams, workspaceID uuid.UUID, e NewEvent, after int64) error {
	ev := Event{WorkspaceID: workspaceID, ShortID: shortid.New(shortid.Event), Type: e.Type, CreatedAt: p.CreatedAt}
	var head, tail string
	ac, balanced := e.Data.(AfterCharge)
	if balanced {
		head, tail = string(append(appendEnvelopeHead(make([]byte, 0, envelopeHeadMax+len(ac.Head)), ev), ac.Head...)), ac.Tail+"}"
	} else {
		body, err := marshalEnvelope(ev, e.Data)
		if err != nil {
			return err
		}
		head = string(body)
	}
	p.EventNumbers, p.EventShortIds, p.EventTypes = append(p.EventNumbers, int64(len(p.EventNumbers)+1)), append(p.EventShortIds, ev.ShortID), append(p.EventTypes, e.Type)
	p.EnvelopeHeads, p.EnvelopeTails = append(p.EnvelopeHeads, head), append(p.EnvelopeTails, tail)
	p.HasBalance, p.EventBalanceOffsets = append(p.HasBalance, balanced), append(p.EventBalanceOffsets, after)
	return nil
}

// settled takes in SettleWorkspace's row: the events (if any) are announced after the
// commit, a charge that stopped the workspace is pushed to the replicas, and the relays are
// woken if a dispatch row was written.
func (t *Tx) settled(workspaceID uuid.UUID, total int64, row dbsqlc.SettleWorkspaceRow, events int64) {
	if total > 0 && (row.BalanceNanoUSD <= 0 && row.BalanceNanoUSD+total > 0 ||
		CapReached(row.MonthlyCapNanoUSD, row.MonthSpendNanoUSD) && !CapReached(row.MonthlyCapNanoUSD, row.MonthSpendNanoUSD-total)) {
		t.moneyChanged = append(t.moneyChanged, workspaceID) // replicas that cached its keys must read it again
	}
	if row.Dispatched > 0 {
		t.dispatched = true
	}
	if events > 0 {
		t.notices = append(t.notices, Notice{WorkspaceID: workspaceID, First: row.FirstSeq + 1, Last: row.FirstSeq + events})
	}
}

// queueSettle queues Settle's writes: the ledger row, then the events and their dispatch
// rows with the workspace's new cursor.
func (t *Tx) queueSettle(ctx context.Context, b batchQueue, workspaceID uuid.UUID, balance int64, charge *Charge, events []Event) error {
	if charge != nil {
		if err := t.sql.InsertLedger(ctx, b, dbsqlc.InsertLedgerParams{ID: newRowID(), WorkspaceID: workspaceID, AmountNanoUSD: -charge.AmountNanoUSD,
			BalanceAfter: balance, Category: charge.Category, Model: &charge.Model, InputTokens: charge.InputTokens,
			OutputTokens: charge.OutputTokens, ConversationID: charge.ConversationID}); err != nil {
			return err
		}
	}
	if len(events) == 0 {
		return nil
	}
	return t.queueEvents(ctx, b, workspaceID, events)
}

// envelopes gives the events their cursors (after seq), ids and envelopes.
func envelopes(workspaceID uuid.UUID, seq int64, events []NewEvent) ([]Event, error) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	out := make([]Event, len(events))
	for i, e := range events {
		ev := Event{WorkspaceID: workspaceID, Seq: seq + int64(i) + 1, ShortID: shortid.New(shortid.Event), Type: e.Type, CreatedAt: now}
		body, err := marshalEnvelope(ev, e.Data)
		if err != nil {
			return nil, err
		}
		ev.Envelope = body
		out[i] = ev
	}
	return out, nil
}

// queueEvents queues the statements that store events and their dispatch rows and move the
// workspace's cursor past them.
func (t *Tx) queueEvents(ctx context.Context, b batchQueue, workspaceID uuid.UUID, events []Event) error {
	n := len(events)
	seqs, ids, types, bodies := make([]int64, n), make([]string, n), make([]string, n), make([]string, n)
	for i, e := range events {
		seqs[i], ids[i], types[i], bodies[i] = e.Seq, e.ShortID, e.Type, string(e.Envelope)
	}
	if err := t.sql.SetEventSeq(ctx, b, dbsqlc.SetEventSeqParams{ID: workspaceID, EventSeq: seqs[n-1]}); err != nil {
		return err
	}
	if err := t.sql.InsertEvents(ctx, b, dbsqlc.InsertEventsParams{WorkspaceID: workspaceID, Seqs: seqs, ShortIds: ids,
		Types: types, Envelopes: bodies, CreatedAt: events[0].CreatedAt}); err != nil {
		return err
	}
	// The rows it inserts (none unless an enabled endpoint subscribes) decide whether the
	// webhook relays are woken after the commit (DispatchChannel).
	return t.sql.InsertEventDispatch(ctx, flagRows{b, &t.dispatched}, dbsqlc.InsertEventDispatchParams{WorkspaceID: workspaceID, Seqs: seqs, Types: types})
}

// EventCursors returns the current cursor of each given workspace.
func (q *queries) EventCursors(ctx context.Context, workspaceIDs []uuid.UUID) (map[uuid.UUID]int64, error) {
	rows, err := q.sql.EventCursors(ctx, q.db, workspaceIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]int64, len(rows))
	for _, r := range rows {
		out[r.ID] = r.EventSeq
	}
	return out, nil
}

// EventChannel is the PostgreSQL NOTIFY channel on which committed events are announced.
const EventChannel = "sb_events"

// DispatchChannel is the PostgreSQL NOTIFY channel that wakes every replica's webhook relay:
// announced after a commit that queued events for delivery (event_dispatch rows), and only
// then, so a workspace without webhooks never costs a relay a claim (the relay's periodic
// sweep remains for an announcement lost to a crash).
const DispatchChannel = "sb_dispatch"

// appendUUID appends id in its canonical text form, as uuid.UUID.String would, without the
// intermediate string.
func appendUUID(b []byte, id uuid.UUID) []byte {
	var text [36]byte
	hex.Encode(text[0:8], id[0:4])
	text[8] = '-'
	hex.Encode(text[9:13], id[4:6])
	text[13] = '-'
	hex.Encode(text[14:18], id[6:8])
	text[18] = '-'
	hex.Encode(text[19:23], id[8:10])
	text[23] = '-'
	hex.Encode(text[24:], id[10:])
	return append(b, text[:]...)
}

// EventsAfter lists the workspace's events with a cursor above after, oldest first.
func (q *queries) EventsAfter(ctx context.Context, workspaceID uuid.UUID, after int64, limit int) ([]Event, error) {
	rows, err := q.sql.EventsAfter(ctx, q.db, dbsqlc.EventsAfterParams{WorkspaceID: workspaceID, After: after, Max: limit})
	return mapRows(rows, event), err
}

// EventByShortID returns one event of the workspace by its `evt_` id.
func (q *queries) EventByShortID(ctx context.Context, workspaceID uuid.UUID, id string) (Event, error) {
	e, err := q.sql.EventByShortID(ctx, q.db, dbsqlc.EventByShortIDParams{WorkspaceID: workspaceID, ShortID: id})
	return event(e), notFound("event", err)
}

func event(e dbsqlc.Event) Event {
	return Event{WorkspaceID: e.WorkspaceID, Seq: e.Seq, ShortID: e.ShortID, Type: e.Type, Envelope: json.RawMessage(e.Envelope), CreatedAt: e.CreatedAt}
}

// Dispatch is an event to fan out, with the enabled endpoints of its workspace that
// subscribe to its type.
type Dispatch struct {
	WorkspaceID uuid.UUID
	Seq         int64
	EndpointIDs []uuid.UUID
}

// ClaimUndispatched takes up to limit events not yet fanned out off the dispatch queue
// (skipping those another replica holds). With each it returns the endpoints that must
// receive it. `*` subscribers receive every event, including the `meta_response.completed`
// events outside the public type list. Run it in the transaction that inserts the delivery
// jobs: the claim is a delete, so on the pool a crash before the jobs exist loses events.
func (q *queries) ClaimUndispatched(ctx context.Context, limit int) ([]Dispatch, error) {
	rows, err := q.sql.ClaimUndispatched(ctx, q.db, limit)
	return mapRows(rows, func(r dbsqlc.ClaimUndispatchedRow) Dispatch {
		return Dispatch{WorkspaceID: r.WorkspaceID, Seq: r.Seq, EndpointIDs: r.EndpointIds}
	}), err
}
