package store

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/gen/dbsqlc"
	"switchboard/money"
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
	for _, e := range events {
		t.notices = append(t.notices, notice(e))
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
	p := dbsqlc.SettleWorkspaceParams{ID: workspaceID, Cost: total, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	var events []Event // without their cursors until the row comes
	after := total     // the charges after the current one: its balance is the batch's plus this
	for _, it := range items {
		if c := it.Charge; c != nil {
			after -= c.AmountNanoUSD
			addSettledLedgerRow(&p, c, after)
		}
		for _, e := range it.Events {
			ev, err := addSettledEvent(&p, workspaceID, e, after)
			if err != nil {
				return err
			}
			events = append(events, ev)
		}
	}
	p.EventCount = int64(len(events))
	return queueRow(batch, func(db dbsqlc.DBTX, got bool) error {
		row, err := t.sql.SettleWorkspace(context.Background(), db, p) // queueRow's DBTXs use no context
		if !got || err != nil {
			return notFound("workspace", err)
		}
		t.settled(workspaceID, total, row, p, events)
		return nil
	})
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

// addSettledEvent adds e to p and returns it with its envelope (the head of it, for an
// AfterCharge event: settled completes it). after is what the batch charges after e's charge.
func addSettledEvent(p *dbsqlc.SettleWorkspaceParams, workspaceID uuid.UUID, e NewEvent, after int64) (Event, error) {
	ev := Event{WorkspaceID: workspaceID, ShortID: shortid.New(shortid.Event), Type: e.Type, CreatedAt: p.CreatedAt}
	ac, balanced := e.Data.(AfterCharge)
	data := e.Data
	if balanced {
		data = json.RawMessage(`null`) // the data is last: the envelope ends `null}`
	}
	body, err := json.Marshal(envelope{ID: ev.ShortID, Type: e.Type, WorkspaceID: workspaceID.String(), CreatedAt: ev.CreatedAt, Data: data})
	if err != nil {
		return Event{}, err
	}
	head, tail := string(body), ""
	if balanced {
		head, tail = head[:len(head)-len(`null}`)]+ac.Head, ac.Tail+"}"
	}
	ev.Envelope = []byte(head)
	p.EventNumbers, p.EventShortIds, p.EventTypes = append(p.EventNumbers, int64(len(p.EventNumbers)+1)), append(p.EventShortIds, ev.ShortID), append(p.EventTypes, e.Type)
	p.EnvelopeHeads, p.EnvelopeTails = append(p.EnvelopeHeads, head), append(p.EnvelopeTails, tail)
	p.HasBalance, p.EventBalanceOffsets = append(p.HasBalance, balanced), append(p.EventBalanceOffsets, after)
	return ev, nil
}

// settled takes in SettleWorkspace's row: the events get their cursors and whole envelopes
// and are announced after the commit, a charge that stopped the workspace is pushed to the
// replicas, and the relays are woken if a dispatch row was written.
func (t *Tx) settled(workspaceID uuid.UUID, total int64, row dbsqlc.SettleWorkspaceRow, p dbsqlc.SettleWorkspaceParams, events []Event) {
	if total > 0 && (row.BalanceNanoUSD <= 0 && row.BalanceNanoUSD+total > 0 ||
		CapReached(row.MonthlyCapNanoUSD, row.MonthSpendNanoUSD) && !CapReached(row.MonthlyCapNanoUSD, row.MonthSpendNanoUSD-total)) {
		t.moneyChanged = append(t.moneyChanged, workspaceID) // replicas that cached its keys must read it again
	}
	if row.Dispatched > 0 {
		t.dispatched = true
	}
	for i, e := range events {
		e.Seq = row.FirstSeq + p.EventNumbers[i]
		if p.HasBalance[i] {
			e.Envelope = []byte(p.EnvelopeHeads[i] + money.FormatUSD(row.BalanceNanoUSD+p.EventBalanceOffsets[i]) + p.EnvelopeTails[i])
		}
		t.notices = append(t.notices, notice(e))
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
		body, err := json.Marshal(envelope{ID: ev.ShortID, Type: e.Type, WorkspaceID: workspaceID.String(), CreatedAt: now, Data: e.Data})
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

// announce sends committed events' notices to every replica's listener. It runs after the
// commit, outside the transaction: a NOTIFY inside it would take PostgreSQL's cluster-wide
// notification lock at commit and serialize all committing turns. A notice lost to a crash
// here only delays a live tail: the outbox is the record, and the hub catches up from it.
func (s *Store) announce(ctx context.Context, notices []string) {
	_ = s.sql.Announce(ctx, s.pool, dbsqlc.AnnounceParams{Channel: EventChannel, Payloads: packNotices(notices)})
}

// packLimit bounds a packed payload under PostgreSQL's 8000-byte NOTIFY limit.
const packLimit = 7900

// packNotices joins runs of one workspace's notices into packs, {"w":"<id>","p":[n1,n2,...]},
// each under packLimit: a batch's events of a workspace cost PostgreSQL (and every listener)
// a few notifications instead of one each (two per ephemeral turn, three per new stored
// conversation). A notice too large to share a payload is sent alone. DecodeNotices reads both.
func packNotices(notices []string) []string {
	out := make([]string, 0, len(notices))
	var pack []byte
	var head string // the open pack's `{"w":"<id>"`
	flush := func() {
		if pack != nil {
			out = append(out, string(append(pack, "]}"...)))
			pack, head = nil, ""
		}
	}
	for _, n := range notices {
		h, ok := noticeHead(n)
		if !ok || len(h)+len(`,"p":[`)+len(n)+len("]}") > packLimit {
			flush()
			out = append(out, n)
			continue
		}
		if pack != nil && (h != head || len(pack)+1+len(n)+len("]}") > packLimit) {
			flush()
		}
		if pack == nil {
			pack, head = append(append(make([]byte, 0, 1024), h...), `,"p":[`...), h
		} else {
			pack = append(pack, ',')
		}
		pack = append(pack, n...)
	}
	flush()
	return out
}

// noticeHead is the `{"w":"<workspace id>"` with which every notice's payload begins.
func noticeHead(n string) (string, bool) {
	const end = len(`{"w":"`) + 36 + 1
	if len(n) <= end || n[:6] != `{"w":"` || n[end-1] != '"' {
		return "", false
	}
	return n[:end], true
}

// DecodeNotices reads an event announcement: one notice, or a pack of one workspace's notices
// (packNotices), in order.
func DecodeNotices(payload []byte) ([]Notice, error) {
	var n struct {
		Notice
		Pack []Notice `json:"p"`
	}
	if err := json.Unmarshal(payload, &n); err != nil {
		return nil, err
	}
	if n.Pack != nil {
		return n.Pack, nil
	}
	return []Notice{n.Notice}, nil
}

// EventChannel is the PostgreSQL NOTIFY channel on which committed events are announced.
const EventChannel = "sb_events"

// DispatchChannel is the PostgreSQL NOTIFY channel that wakes every replica's webhook relay:
// announced after a commit that queued events for delivery (event_dispatch rows), and only
// then, so a workspace without webhooks never costs a relay a claim (the relay's periodic
// sweep remains for an announcement lost to a crash).
const DispatchChannel = "sb_dispatch"

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

// notice is the announcement payload of an event: json.Marshal of its Notice, written out by
// hand because json.Marshal re-scans and compacts the envelope (a RawMessage), which was 1.8%
// of a stored turn's CPU in process. The envelope is compact JSON already (envelopes), and an
// event type that would need escaping takes json.Marshal's path.
func notice(e Event) string {
	if !plainType(e.Type) {
		return marshalNotice(e)
	}
	b := make([]byte, 0, len(`{"w":"","s":,"t":"","e":}`)+36+20+len(e.Type)+len(e.Envelope))
	b = append(b, `{"w":"`...)
	b = appendUUID(b, e.WorkspaceID)
	b = append(b, `","s":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"t":"`...)
	b = append(b, e.Type...)
	b = append(b, '"')
	if len(e.Envelope) > 0 && len(e.Envelope) <= notifyLimit {
		b = append(b, `,"e":`...)
		b = append(b, e.Envelope...)
	}
	return string(append(b, '}'))
}

// marshalNotice is notice by json.Marshal.
func marshalNotice(e Event) string {
	n := Notice{WorkspaceID: e.WorkspaceID, Seq: e.Seq, Type: e.Type}
	if len(e.Envelope) <= notifyLimit {
		n.Envelope = e.Envelope
	}
	payload, _ := json.Marshal(n) // plain types and valid JSON: cannot fail
	return string(payload)
}

// plainType reports that an event type needs no escaping in a JSON string (every type the
// contract names: lower-case words, dots and underscores).
func plainType(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

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

// Pgx exposes the transaction to the job queue, whose inserts must commit together with the
// store's writes. A pipelined transaction (Store.Pipelined) has none to expose.
func (t *Tx) Pgx() pgx.Tx {
	if t.tx == nil {
		panic("store: Pgx on a pipelined transaction")
	}
	return t.tx
}

// EventsAfter lists the workspace's events with a cursor above after, oldest first.
func (q *queries) EventsAfter(ctx context.Context, workspaceID uuid.UUID, after int64, limit int) ([]Event, error) {
	rows, err := q.sql.EventsAfter(ctx, q.db, dbsqlc.EventsAfterParams{WorkspaceID: workspaceID, After: after, Max: limit})
	return mapRows(rows, event), err
}

// EventBySeq returns one event of the workspace.
func (q *queries) EventBySeq(ctx context.Context, workspaceID uuid.UUID, seq int64) (Event, error) {
	e, err := q.sql.EventBySeq(ctx, q.db, dbsqlc.EventBySeqParams{WorkspaceID: workspaceID, Seq: seq})
	return event(e), notFound("event", err)
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
