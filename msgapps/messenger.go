package msgapps

import (
	"context"
	"encoding/json"
	"fmt"
)

// Messenger (msgapp_2): Facebook Messenger through the Send API, as a Facebook Page.

// MessengerLimit is the longest text Messenger's Send API takes, in characters.
const MessengerLimit = 2000

// MessengerInbound reads a Messenger webhook (object "page") for the page pageID.
func MessengerInbound(raw []byte, pageID string) ([]Inbound, error) {
	return metaMessaging(raw, "page", pageID)
}

func metaMessaging(raw []byte, object, account string) ([]Inbound, error) {
	var w MessagingWebhook
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("the webhook body is not Meta's JSON: %w", err)
	}
	if w.Object != object {
		return nil, fmt.Errorf("the webhook's object is %q, not %s", w.Object, object)
	}
	return messagingInbound(w, account), nil
}

// SendAPIText is the Send API's text message (Messenger and Instagram). MessagingType
// RESPONSE: a reply within the 24-hour window.
type SendAPIText struct {
	Recipient struct {
		ID string `json:"id"`
	} `json:"recipient"`
	MessagingType string `json:"messaging_type,omitempty"`
	Message       struct {
		Text string `json:"text"`
	} `json:"message"`
}

func sendAPIText(to, text string) SendAPIText {
	var m SendAPIText
	m.Recipient.ID, m.MessagingType, m.Message.Text = to, "RESPONSE", text
	return m
}

// SendMessenger sends a text from the page to a person (their page-scoped id): POST
// {graph}/{page_id}/messages with the page access token. It returns the message id.
func (c Config) SendMessenger(ctx context.Context, pageID, token, to, text string) (string, error) {
	var ans sendAnswer
	if err := c.graphPost(ctx, pageID+"/messages", token, sendAPIText(to, text), &ans); err != nil {
		return "", err
	}
	if ans.MessageID == "" {
		return "", fmt.Errorf("messenger answered a send without a message id")
	}
	return ans.MessageID, nil
}

// messenger is msgapp_2.
type messenger struct{}

func (messenger) account() string { return "page_id" }
func (messenger) inbound(raw []byte, account string) ([]Inbound, error) {
	return MessengerInbound(raw, account)
}
func (messenger) send(ctx context.Context, c Config, account, token, to, text string) (string, error) {
	return c.SendMessenger(ctx, account, token, to, text)
}
func (messenger) style() Style { return Plain }
func (messenger) limit() int   { return MessengerLimit }
