package msgapps

import (
	"context"
	"fmt"
	"net/http"
)

// Instagram (msgapp_3): Instagram Messaging through the Instagram API with Instagram Login
// (graph.instagram.com), as a professional Instagram account.

// InstagramLimit is the longest text Instagram Messaging takes, in characters.
const InstagramLimit = 1000

// InstagramInbound reads an Instagram webhook (object "instagram") for the account.
func InstagramInbound(raw []byte, accountID string) ([]Inbound, error) {
	return metaMessaging(raw, "instagram", accountID)
}

// SendInstagram sends a text from the Instagram account to a person (their
// Instagram-scoped id): POST {instagram graph}/{ig_account_id}/messages. It returns the message id.
func (c Config) SendInstagram(ctx context.Context, accountID, token, to, text string) (string, error) {
	m := sendAPIText(to, text)
	m.MessagingType = "" // Instagram's send takes recipient and message only
	var ans sendAnswer
	h := http.Header{"Authorization": {"Bearer " + token}}
	if err := postJSON(ctx, c.client(), c.instagramURL()+"/"+accountID+"/messages", h, m, &ans, graphErrorText); err != nil {
		return "", err
	}
	if ans.MessageID == "" {
		return "", fmt.Errorf("instagram answered a send without a message id")
	}
	return ans.MessageID, nil
}

// instagram is msgapp_3.
type instagram struct{}

func (instagram) account() string { return "instagram_account_id" }
func (instagram) inbound(raw []byte, account string) ([]Inbound, error) {
	return InstagramInbound(raw, account)
}
func (instagram) send(ctx context.Context, c Config, account, token, to, text string) (string, error) {
	return c.SendInstagram(ctx, account, token, to, text)
}
func (instagram) style() Style { return Plain }
func (instagram) limit() int   { return InstagramLimit }
