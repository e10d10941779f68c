package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestTranscriptUsageInABrowser: a reply shows the model, tokens and cost of its turn; a
// message without recorded usage shows none; a tool call is collapsed, with its arguments and
// result inside. Screenshot: transcript-usage.
func TestTranscriptUsageInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx := context.Background()
	c, err := s.store.ConversationByRef(ctx, s.workspace.ID, s.convRef)
	require.NoError(t, err)
	// A turn as the pipeline commits it: its messages and its charge in one transaction.
	require.NoError(t, s.store.InTx(ctx, func(tx *store.Tx) error {
		err := tx.AppendMessages(ctx, s.workspace.ID, c.ID, []store.Message{
			{Role: "user", Content: "And order 5678?"},
			{Role: "assistant", ToolCalls: json.RawMessage(`[{"id":"c1","name":"lookup_order","arguments":{"order":"5678"}}]`)},
			{Role: "tool", ToolResults: json.RawMessage(`[{"call_id":"c1","name":"lookup_order","content":"{\"status\":\"packed\"}"}]`)},
			{Role: "assistant", Content: "Order 5678 is packed and leaves today."},
		})
		if err != nil {
			return err
		}
		_, _, err = tx.Settle(ctx, s.workspace.ID, &store.Charge{AmountNanoUSD: 412_345, Category: "model_usage", Model: "beta-5.4-mini",
			InputTokens: 412, OutputTokens: 38, ConversationID: &c.ID}, func(int64) []store.NewEvent { return nil })
		return err
	}))

	b := browser(t)
	s.signIn(b, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(s.url+"/dashboard/conversations/"+s.convRef), chromedp.WaitVisible(chromedp.CSS(`ol.transcript`))))
	usage := text(b, t, "ol.transcript .usage")
	require.Equal(t, "beta-5.4-mini · 412 in / 38 out tokens · $0.000412345", strings.TrimSpace(usage))
	n, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll("ol.transcript .usage").length`))
	require.NoError(t, err)
	require.Equal(t, 1, n, "the seeded reply has no turn recorded with it, so it shows no usage")

	open, err := chromedp.Run(b, chromedp.Evaluate[bool](`document.querySelector("details.tool-call").open`))
	require.NoError(t, err)
	require.False(t, open, "tool calls are collapsed")
	require.Contains(t, text(b, t, "details.tool-call summary"), "lookup_order")
	require.NoError(t, chromedp.Do(b, chromedp.Click(chromedp.CSS(`details.tool-call summary`))))
	call := text(b, t, "details.tool-call")
	require.Contains(t, call, `"order": "5678"`)
	require.Contains(t, call, `"status": "packed"`)
	tools, err := chromedp.Run(b, chromedp.Evaluate[int](`document.querySelectorAll("ol.transcript li.tool").length`))
	require.NoError(t, err)
	require.Zero(t, tools, "the tool message is shown with its call, not again")
	s.screenshot(b, t, "/dashboard/conversations/"+s.convRef, "transcript-usage")
}

// TestVoiceTranscriptInABrowser: a phone call's conversation shows, above its messages, how
// the call went: its direction and number, what the flow did (here: transferred to a person),
// the carrier's final status and the minutes billed. Screenshot: transcript-call.
func TestVoiceTranscriptInABrowser(t *testing.T) {
	s := newSite(t)
	ctx := context.Background()
	ch, err := s.store.CreateChannel(ctx, s.workspace.ID, store.ChannelWrite{ID: store.NewChannelID(), Provider: "telco_voice", Name: "Front desk line",
		Config: json.RawMessage(`{"phone_number":"+14155550100"}`), Status: "connected", InboundToken: "voice-transcript-test"})
	require.NoError(t, err)
	conv, err := s.store.CreateConversation(ctx, s.workspace.ID, "telco_voice")
	require.NoError(t, err)
	require.NoError(t, s.store.InTx(ctx, func(tx *store.Tx) error {
		return tx.AppendMessages(ctx, s.workspace.ID, conv.ID, []store.Message{
			{Role: "assistant", Content: "Hello, this is Helper, an automated assistant for Acme. How can I help?"},
			{Role: "user", Content: "My parcel never arrived, I want to talk to someone."},
			{Role: "assistant", Content: "Of course. I am transferring you to a colleague now."},
		})
	}))
	call, err := s.store.StartVoiceCall(ctx, s.workspace.ID, store.NewVoiceCall{ChannelID: ch.ID, CallSID: "CA0123456789abcdef0123456789abcdef",
		Direction: "inbound", Remote: "+14155550123", Local: "+14155550100", ConversationID: &conv.ID})
	require.NoError(t, err)
	require.NoError(t, s.store.SetVoiceCallOutcome(ctx, s.workspace.ID, call.ID, "transferred"))
	_, _, err = s.store.EndVoiceCall(ctx, s.workspace.ID, call.ID, "completed", 95, 2)
	require.NoError(t, err)

	b := browser(t)
	s.signIn(b, t, "admin@acme.example")
	require.NoError(t, chromedp.Do(b, chromedp.Navigate(s.url+"/dashboard/conversations/"+conv.ShortID), chromedp.WaitVisible(chromedp.CSS(`p.call-outcome`))))
	require.Equal(t, "Call: inbound · +14155550123 · outcome transferred · ended completed after 95 s (2 min billed)",
		strings.TrimSpace(text(b, t, "p.call-outcome")))
	require.Contains(t, text(b, t, "ol.transcript"), "I am transferring you to a colleague now.")
	s.screenshot(b, t, "/dashboard/conversations/"+conv.ShortID, "transcript-call")
}
