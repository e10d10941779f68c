package msgapps

import (
	"context"
	"fmt"

	"switchboard/blueprint"
	"switchboard/campaigns"
	"switchboard/channels"
	"switchboard/store"
)

// CampaignSender sends campaigns' openings on WhatsApp channels (campaigns.AppSender).
type CampaignSender struct {
	s   *channels.Service
	cfg Config
}

// Campaigns is the campaigns' AppSender over the channel layer's WhatsApp channels.
func Campaigns(s *channels.Service, cfg Config) *CampaignSender {
	return &CampaignSender{s: s, cfg: cfg}
}

// SendCampaign sends m from a WhatsApp channel: first_message as a text (in WhatsApp's
// formatting) when the person wrote within the customer-service window, the approved
// template otherwise.
func (c *CampaignSender) SendCampaign(ctx context.Context, ch store.Channel, m campaigns.AppMessage) (string, bool, error) {
	if ch.Provider != string(blueprint.ChannelMsgApp1) {
		return "", false, fmt.Errorf("campaigns send on msgapp_1 channels only, not %s", ch.Provider)
	}
	cfg, err := c.s.OpenConfig(ch)
	if err != nil {
		return "", false, err
	}
	phoneNumberID, _, _ := cfg.Str("phone_number_id")
	token := cfg.Secrets["access_token"]
	closed, err := c.s.WindowClosed(ctx, ch, m.To)
	if err != nil {
		return "", false, err
	}
	if !closed {
		id, err := sendParts(ctx, Format(m.Text, WhatsAppStyle), WhatsAppLimit, func(ctx context.Context, part string) (string, error) {
			return c.cfg.SendWhatsApp(ctx, phoneNumberID, token, m.To, part)
		})
		return id, false, err
	}
	id, err := c.cfg.SendWhatsAppTemplate(ctx, phoneNumberID, token, m.To, m.Template.Name, m.Template.Language, m.Template.Parameters)
	return id, true, err
}
