package store_test

import (
	"context"
	"testing"

	"switchboard/store"
	"switchboard/store/storetest"
)

// turnCompleted is the data of an ephemeral turn's turn.completed event, as the pipeline
// writes it.
type turnCompleted struct {
	ConversationID *string `json:"conversation_id"`
	FinishReason   string  `json:"finish_reason"`
	Model          string  `json:"model"`
	ReplyPreview   string  `json:"reply_preview"`
	Surface        string  `json:"surface"`
}

// BenchmarkSettleFlush is one write-behind flush under load: 100 ephemeral turns of one
// workspace (a charge, turn.completed and spend.recorded each) settled in a pipelined
// transaction, then announced. Its allocations are the server's share of an ephemeral turn's
// metering (per op: 100 turns).
func BenchmarkSettleFlush(b *testing.B) {
	ctx := context.Background()
	s := storetest.New(b)
	w, err := s.CreateWorkspace(ctx, "flush", 1<<60)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Settlement, 100)
	for i := range batch {
		batch[i] = store.Settlement{
			Charge: &store.Charge{AmountNanoUSD: 63750, Category: "model_usage", Model: "beta-5.4", InputTokens: 9, OutputTokens: 12},
			Events: []store.NewEvent{
				{Type: "turn.completed", Data: turnCompleted{FinishReason: "stop", Model: "beta-5.4",
					ReplyPreview: "lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum ", Surface: "chat.completions"}},
				{Type: "spend.recorded", Data: store.AfterCharge{Head: `{"amount_usd":0.00006375,"balance_usd":`, Tail: `,"category":"model_usage"}`}},
			},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		announce, err := s.Pipelined(ctx, func(tx *store.Tx) error { return tx.SettleMany(ctx, w.ID, batch) })
		if err != nil {
			b.Fatal(err)
		}
		announce()
	}
}
