package campaigns

import (
	"context"
	"encoding/json"
	"errors"

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
	charge, conv, err := sendCharge(ctx, tx, c.WorkspaceID, sendID, cost, "sms")
	if err != nil {
		return err
	}
	_, _, err = tx.Settle(ctx, c.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		return []store.NewEvent{{Type: "spend.recorded", Data: withConversation(map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "sms",
			"balance_usd": json.Number(money.FormatUSD(balance)), "campaign_id": c.ID.String(),
			"segments": segments, "credits": credits}, conv)}}
	})
	return err
}

// sendCharge is the charge of a send the provider accepted, and the conversation the send
// opened, which its ledger row and spend.recorded name: nil when the conversation was
// deleted meanwhile (its agent deleted, a bulk delete, retention). The provider has the
// message, so it is charged all the same, naming no conversation (spend.recorded's
// conversation_id is optional).
func sendCharge(ctx context.Context, tx *store.Tx, ws, sendID uuid.UUID, cost int64, category string) (*store.Charge, *store.SendConversation, error) {
	conv, err := tx.CampaignSendConversation(ctx, ws, sendID)
	if errors.Is(err, store.ErrNotFound) {
		return &store.Charge{AmountNanoUSD: cost, Category: category}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &store.Charge{AmountNanoUSD: cost, Category: category, ConversationID: &conv.ID}, &conv, nil
}

// withConversation adds conv's id to an event's data, when there is one.
func withConversation(data map[string]any, conv *store.SendConversation) map[string]any {
	if conv != nil {
		data["conversation_id"] = conv.ShortID
	}
	return data
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
	charge, conv, err := sendCharge(ctx, tx, c.WorkspaceID, sendID, cost, "message")
	if err != nil {
		return err
	}
	_, _, err = tx.Settle(ctx, c.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		return []store.NewEvent{{Type: "spend.recorded", Data: withConversation(map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "message",
			"balance_usd": json.Number(money.FormatUSD(balance)), "campaign_id": c.ID.String(),
			"channel_id": ch.ID.String(), "app": ch.Provider, "direction": "outbound", "parts": 1, "template": template}, conv)}}
	})
	return err
}
