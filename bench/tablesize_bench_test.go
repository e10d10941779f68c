package bench

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/shortid"
)

// BenchmarkStoredResponseTableSize is BenchmarkStoredResponseParallel (64 in flight) with the
// turn tables already holding N turns of another workspace: a stored turn's cost as the
// database grows. The indexes a turn writes to, and that its reference checks read, are
// shared by every workspace, so a busy database's turns pay for its size there. The filler is
// written as the store writes turns (UUIDv7 keys for conversations, responses and ledger rows,
// random short ids; two messages and three events a turn) by COPY before the timer starts,
// and grows from one size to the next within a run:
//
//	./bench.test -test.run '^$' -test.bench '^BenchmarkStoredResponseTableSize$' -test.benchtime 20000x
func BenchmarkStoredResponseTableSize(b *testing.B) {
	need(b)
	ctx := context.Background()
	filler, err := env.store.CreateWorkspace(ctx, "filler-"+uuid.NewString()[:8], 0)
	if err != nil {
		b.Fatal(err)
	}
	stored := 0
	for _, n := range []int{0, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("filler=%d", n), func(b *testing.B) {
			if n > stored {
				if err := fillTurns(ctx, filler.ID, stored, n); err != nil {
					b.Fatal(err)
				}
				stored = n
				// The statistics and visibility map autovacuum would have after such a load
				// (not before the first size: statistics of empty tables would mislead the
				// planner about the turns that fill them during the run).
				if _, err := env.store.Pool().Exec(ctx, `VACUUM ANALYZE conversations, messages, responses, ledger, events`); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					serve(b, http.MethodPost, "/v1/responses", responseBody, nil)
				}
			})
		})
	}
}

// fillTurns writes the rows of stored turns from..to-1 of workspace ws, in chunks of one
// COPY per table, with the reference-check triggers off for the session when the role may
// (a superuser's; otherwise they run, which is only slower).
func fillTurns(ctx context.Context, ws uuid.UUID, from, to int) error {
	conn, err := env.store.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err == nil {
		defer func() { _, _ = conn.Exec(context.Background(), `RESET session_replication_role`) }()
	}
	const chunk = 50_000
	for lo := from; lo < to; lo += chunk {
		if err := fillChunk(ctx, conn.Conn(), ws, lo, min(lo+chunk, to)); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, `UPDATE workspaces SET event_seq = $2 WHERE id = $1`, ws, int64(to)*3)
	return err
}

// fillChunk copies turns lo..hi-1: each a conversation, its two messages, a response, a
// ledger row and three events, created a millisecond apart ending now.
func fillChunk(ctx context.Context, conn *pgx.Conn, ws uuid.UUID, lo, hi int) error {
	n := hi - lo
	convs, resps := make([][]any, n), make([][]any, n)
	msgs, ledger, events := make([][]any, 0, 2*n), make([][]any, n), make([][]any, 0, 3*n)
	at := time.Now().Add(-time.Duration(n) * time.Millisecond)
	for i := range n {
		turn, created := lo+i, at.Add(time.Duration(i)*time.Millisecond)
		conv := uuid.Must(uuid.NewV7())
		convs[i] = []any{conv, ws, shortid.New(shortid.Conversation), "api", 2, created}
		msgs = append(msgs, []any{ws, conv, 1, "user", "Say hello."}, []any{ws, conv, 2, "assistant", "Hello! How can I help?"})
		resp := shortid.New(shortid.Response)
		resps[i] = []any{uuid.Must(uuid.NewV7()), ws, resp, conv, "completed", "alpha-sonnet-4-6",
			`{"id":"` + resp + `","object":"response","status":"completed"}`, created}
		ledger[i] = []any{uuid.Must(uuid.NewV7()), ws, int64(-1000), int64(-1000 * (turn + 1)), "model_usage", "alpha-sonnet-4-6", conv, created}
		for k, typ := range []string{"conversation.created", "turn.completed", "spend.recorded"} {
			id := shortid.New(shortid.Event)
			events = append(events, []any{ws, int64(turn*3 + k + 1), id, typ,
				`{"id":"` + id + `","type":"` + typ + `","workspace_id":"` + ws.String() + `","data":{}}`, created})
		}
	}
	copies := []struct {
		table string
		cols  []string
		rows  [][]any
	}{
		{"conversations", []string{"id", "workspace_id", "short_id", "channel", "message_seq", "created_at"}, convs},
		{"messages", []string{"workspace_id", "conversation_id", "seq", "role", "content"}, msgs},
		{"responses", []string{"id", "workspace_id", "short_id", "conversation_id", "status", "model", "body", "created_at"}, resps},
		{"ledger", []string{"id", "workspace_id", "amount_nano_usd", "balance_after", "category", "model", "conversation_id", "created_at"}, ledger},
		{"events", []string{"workspace_id", "seq", "short_id", "type", "envelope", "created_at"}, events},
	}
	for _, c := range copies {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
			return fmt.Errorf("fill %s: %w", c.table, err)
		}
	}
	return nil
}
