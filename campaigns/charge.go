package campaigns

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/money"
	"switchboard/phonenumbers"
	"switchboard/quota"
	"switchboard/store"
)

// Reasons a campaign is paused for money, beside user, agent_disabled, agent_missing and
// no_sending_number.
const (
	// PausedSuspended: the workspace was suspended (in the suspending transaction, or by the
	// sending job when it finds the workspace suspended).
	PausedSuspended = quota.Suspended
	// PausedNoCredit: the workspace's balance is used up.
	PausedNoCredit = quota.NoCredit
	// PausedCapReached: the workspace's spend this month reached its monthly cap.
	PausedCapReached = quota.CapReached
)

// mayPay is nil when the workspace can pay for messages, else the 403 insufficient_quota
// that refuses to start a campaign, saying why.
func mayPay(ctx context.Context, q interface {
	WorkspaceByID(context.Context, uuid.UUID) (store.Workspace, error)
}, ws uuid.UUID) error {
	w, err := q.WorkspaceByID(ctx, ws)
	if err != nil {
		return err
	}
	var e *apierr.Error
	switch quota.Refusal(w) { // the one quota rule
	case "":
		return nil
	case PausedSuspended:
		e = apierr.Quota("The workspace %q is suspended: campaigns cannot send.", w.Name)
		e.Hint = "Ask an operator to resume it (`switchboard workspaces resume NAME`)."
	case PausedNoCredit:
		e = apierr.Quota("The workspace %q has no credit left to pay for messages.", w.Name)
		e.Hint = "Ask an operator to add credit (`switchboard workspaces credit NAME --usd AMOUNT`)."
	default:
		e = apierr.Quota("The workspace %q reached its monthly spend cap of $%s ($%s spent this month): campaigns cannot send until it resets or is raised.",
			w.Name, money.FormatUSD(*w.MonthlyCapNanoUSD), money.FormatUSD(w.MonthSpendNanoUSD))
		e.Hint = "An admin can raise or clear the cap on the dashboard's Settings page."
	}
	return e
}

// chargeSend charges a message the provider accepted (sent) to the workspace, with
// its spend.recorded {category: "sms"}, in the transaction that records the send's result:
// the price of its segments to the destination (phonenumbers.SMSCredits). A failed send is
// not charged. It settles, so it comes last in the transaction.
func (s *Service) chargeSend(ctx context.Context, tx *store.Tx, c store.Campaign, sendID uuid.UUID, sent bool, to, body string) error {
	if !sent {
		return nil
	}
	credits, segments := phonenumbers.SMSCredits(to, body)
	cost := int64(credits) * phonenumbers.NanoUSDPerCredit
	conv, err := tx.CampaignSendConversation(ctx, c.WorkspaceID, sendID)
	if err != nil {
		return err
	}
	charge := &store.Charge{AmountNanoUSD: cost, Category: "sms", ConversationID: &conv.ID}
	_, _, err = tx.Settle(ctx, c.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		return []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "sms",
			"balance_usd": json.Number(money.FormatUSD(balance)), "conversation_id": conv.ShortID, "campaign_id": c.ID.String(),
			"segments": segments, "credits": credits}}}
	})
	return err
}

// chargeApp charges a campaign message a messaging app accepted, at the app's per-message
// price (the catalog's), with its spend.recorded {category: "message", app, direction:
// "outbound", parts: 1, template}, as the channel layer meters the app's other messages. A
// failed send is not charged. It settles, so it comes last in the transaction.
func (s *Service) chargeApp(ctx context.Context, tx *store.Tx, c store.Campaign, ch store.Channel, sendID uuid.UUID, sent, template bool) error {
	if !sent {
		return nil
	}
	cost := catalog.MessagePriceNanoUSD(ch.Provider)
	conv, err := tx.CampaignSendConversation(ctx, c.WorkspaceID, sendID)
	if err != nil {
		return err
	}
	charge := &store.Charge{AmountNanoUSD: cost, Category: "message", ConversationID: &conv.ID}
	_, _, err = tx.Settle(ctx, c.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		return []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "message",
			"balance_usd": json.Number(money.FormatUSD(balance)), "conversation_id": conv.ShortID, "campaign_id": c.ID.String(),
			"channel_id": ch.ID.String(), "app": ch.Provider, "direction": "outbound", "parts": 1, "template": template}}}
	})
	return err
}
