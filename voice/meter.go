package voice

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/twilio/twilio-go/twiml"

	"switchboard/catalog"
	"switchboard/money"
	"switchboard/store"
)

// finalStatuses are the call statuses that end a call.
var finalStatuses = map[string]bool{"completed": true, "busy": true, "no-answer": true, "failed": true, "canceled": true}

// status applies the call's status callback: a final status closes its conversation and
// meters the call per started minute, once (a repeated callback changes nothing).
func (f *flow) status(ctx context.Context) (string, error) {
	empty := func() (string, error) { return twiml.Voice(nil) }
	if !finalStatuses[f.call.Status] {
		return empty()
	}
	call, err := f.s.store.VoiceCallBySID(ctx, f.c.WorkspaceID, f.c.ID, f.call.SID)
	if errors.Is(err, store.ErrNotFound) && f.query.Get("send") != "" {
		// A campaign call that ended (busy, no answer) before its placing was recorded.
		sendID, perr := f.sendParam()
		if perr != nil {
			return "", perr
		}
		call, _, err = f.s.campaignCall(ctx, f.c, f.call.SID, sendID)
	}
	if err != nil {
		return "", err
	}
	seconds := 0
	if f.call.Status == "completed" {
		seconds = f.call.Duration
	}
	minutes := (seconds + 59) / 60
	ws := f.c.WorkspaceID
	err = f.s.store.InTx(ctx, func(tx *store.Tx) error {
		// The call's conversation first (its KEY SHARE; it is closed below): a delete of
		// conversations locks the conversation, then clears its calls' link to it, so
		// taking the call's row first deadlocked with it.
		if call.ConversationID != nil {
			if err := tx.KeyShareConversations(ctx, []uuid.UUID{ws}, []uuid.UUID{*call.ConversationID}); err != nil {
				return err
			}
		}
		ended, ok, err := tx.EndVoiceCall(ctx, ws, call.ID, f.call.Status, seconds, minutes)
		if err != nil || !ok {
			return err
		}
		if ended.ConversationID != nil {
			if err := tx.CloseCallConversation(ctx, ws, *ended.ConversationID); err != nil {
				return err
			}
		}
		if ended.CampaignSendID != nil {
			// completed: delivered (someone or something answered); otherwise undelivered.
			delivery := "undelivered"
			if f.call.Status == "completed" {
				delivery = "delivered"
			}
			if err := tx.ApplyCallStatus(ctx, ws, *ended.CampaignSendID, f.call.Status, delivery); err != nil {
				return err
			}
		}
		if minutes == 0 {
			return nil
		}
		return f.s.charge(ctx, tx, ended, minutes)
	})
	if err != nil {
		return "", err
	}
	return empty()
}

// charge meters a call: its started minutes at the catalog's per-minute price, with its
// spend.recorded {category: "voice", minutes, conversation_id}. It settles, so it comes last.
func (s *Service) charge(ctx context.Context, tx *store.Tx, call store.VoiceCall, minutes int) error {
	cost := int64(minutes) * catalog.VoiceNanoUSDPerMinute
	var short, campaign string
	if call.CampaignSendID != nil {
		cc, err := tx.CampaignCallOf(ctx, call.WorkspaceID, *call.CampaignSendID)
		if err != nil {
			return err
		}
		campaign = cc.CampaignID.String()
	}
	if call.ConversationID != nil {
		conv, err := tx.ConversationByRef(ctx, call.WorkspaceID, call.ConversationID.String())
		if err != nil {
			return err
		}
		short = conv.ShortID
	}
	charge := &store.Charge{AmountNanoUSD: cost, Category: "voice", ConversationID: call.ConversationID}
	_, _, err := tx.Settle(ctx, call.WorkspaceID, charge, func(balance int64) []store.NewEvent {
		data := map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "category": "voice", "direction": call.Direction,
			"balance_usd": json.Number(money.FormatUSD(balance)), "minutes": minutes, "seconds": deref32(call.DurationS),
			"channel_id": call.ChannelID.String(), "call_sid": call.CallSid}
		if short != "" {
			data["conversation_id"] = short
		}
		if campaign != "" {
			data["campaign_id"] = campaign
		}
		return []store.NewEvent{{Type: "spend.recorded", Data: data}}
	})
	return err
}

func deref32(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
