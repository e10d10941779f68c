package msgapps

import (
	"context"
	"encoding/json"
	"fmt"
)

// WhatsApp (msgapp_1): the WhatsApp Business Cloud API.

// WhatsAppLimit is the longest text message WhatsApp takes, in characters.
const WhatsAppLimit = 4096

// WhatsAppWebhook is the body of a WhatsApp Business Account webhook (object
// "whatsapp_business_account"): messages and the statuses of sent messages, per phone number.
type WhatsAppWebhook struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string        `json:"field"`
			Value WhatsAppValue `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

// WhatsAppValue is one change's value.
type WhatsAppValue struct {
	MessagingProduct string `json:"messaging_product"`
	Metadata         struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []struct {
		From      string `json:"from"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Type      string `json:"type"`
		Text      *struct {
			Body string `json:"body"`
		} `json:"text"`
		Button *struct {
			Text string `json:"text"`
		} `json:"button"`
		Reaction *struct {
			Emoji string `json:"emoji"`
		} `json:"reaction"`
	} `json:"messages"`
	Statuses []struct {
		ID          string `json:"id"`
		Status      string `json:"status"`
		RecipientID string `json:"recipient_id"`
		Errors      []struct {
			Code  int    `json:"code"`
			Title string `json:"title"`
		} `json:"errors"`
	} `json:"statuses"`
}

// WhatsAppInbound reads a WhatsApp webhook's messages to the phone number phoneNumberID,
// with the sender's profile name, and the statuses of messages it sent. A quick-reply
// button's text counts as text; anything else (image, audio, video, document, sticker,
// location, contacts, reaction, ...) is its type with a placeholder.
func WhatsAppInbound(raw []byte, phoneNumberID string) ([]Inbound, error) {
	var w WhatsAppWebhook
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("the webhook body is not WhatsApp's JSON: %w", err)
	}
	if w.Object != "whatsapp_business_account" {
		return nil, fmt.Errorf("the webhook's object is %q, not whatsapp_business_account", w.Object)
	}
	var out []Inbound
	for _, e := range w.Entry {
		for _, ch := range e.Changes {
			v := ch.Value
			if ch.Field != "messages" || v.Metadata.PhoneNumberID != phoneNumberID {
				continue
			}
			names := map[string]string{}
			for _, c := range v.Contacts {
				names[c.WaID] = c.Profile.Name
			}
			for _, m := range v.Messages {
				in := Inbound{ID: m.ID, From: m.From, Name: names[m.From], Phone: "+" + m.From, Kind: "text"}
				switch {
				case m.Type == "text" && m.Text != nil && m.Text.Body != "":
					in.Text = m.Text.Body
				case m.Type == "button" && m.Button != nil && m.Button.Text != "":
					in.Text = m.Button.Text
				case m.Type == "reaction" && m.Reaction != nil:
					in.Kind, in.Text = "reaction", Placeholder("reaction "+m.Reaction.Emoji)
				default:
					in.Kind, in.Text = or(m.Type, "unknown"), Placeholder(or(m.Type, "unknown"))
				}
				out = append(out, in)
			}
			for _, s := range v.Statuses {
				in := Inbound{ID: s.ID, From: s.RecipientID, Status: s.Status}
				if len(s.Errors) > 0 {
					in.Reason = fmt.Sprintf("%s (%d)", s.Errors[0].Title, s.Errors[0].Code)
				}
				out = append(out, in)
			}
		}
	}
	return out, nil
}

// WhatsAppText is the Cloud API's text message.
type WhatsAppText struct {
	MessagingProduct string `json:"messaging_product"`
	RecipientType    string `json:"recipient_type"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Text             struct {
		PreviewURL bool   `json:"preview_url"`
		Body       string `json:"body"`
	} `json:"text"`
}

// whatsAppAnswer is the Cloud API's answer to a send.
type whatsAppAnswer struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// SendWhatsApp sends a text (at most WhatsAppLimit characters) from the phone number to the
// person's wa_id: POST {graph}/{phone_number_id}/messages. It returns the message id (wamid).
func (c Config) SendWhatsApp(ctx context.Context, phoneNumberID, token, to, text string) (string, error) {
	msg := WhatsAppText{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, Type: "text"}
	msg.Text.Body = text
	var ans whatsAppAnswer
	if err := c.graphPost(ctx, phoneNumberID+"/messages", token, msg, &ans); err != nil {
		return "", err
	}
	if len(ans.Messages) == 0 || ans.Messages[0].ID == "" {
		return "", fmt.Errorf("WhatsApp answered a send without a message id")
	}
	return ans.Messages[0].ID, nil
}

// WhatsAppTemplateMessage is the Cloud API's template message: an approved template by name
// and language, its body's {{1}}, {{2}}… filled with text parameters. It is the one message
// WhatsApp delivers to a person outside their customer-service window.
type WhatsAppTemplateMessage struct {
	MessagingProduct string           `json:"messaging_product"`
	RecipientType    string           `json:"recipient_type"`
	To               string           `json:"to"`
	Type             string           `json:"type"`
	Template         WhatsAppTemplate `json:"template"`
}

// WhatsAppTemplate is the template of a template message.
type WhatsAppTemplate struct {
	Name     string `json:"name"`
	Language struct {
		Code string `json:"code"`
	} `json:"language"`
	Components []WhatsAppComponent `json:"components,omitempty"`
}

// WhatsAppComponent fills one component of a template (here, its body).
type WhatsAppComponent struct {
	Type       string              `json:"type"`
	Parameters []WhatsAppParameter `json:"parameters"`
}

// WhatsAppParameter is one parameter of a component.
type WhatsAppParameter struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// SendWhatsAppTemplate sends the approved template name in language to the person's wa_id,
// its body parameters in order: POST {graph}/{phone_number_id}/messages. It returns the
// message id (wamid).
func (c Config) SendWhatsAppTemplate(ctx context.Context, phoneNumberID, token, to, name, language string, body []string) (string, error) {
	msg := WhatsAppTemplateMessage{MessagingProduct: "whatsapp", RecipientType: "individual", To: to, Type: "template"}
	msg.Template.Name, msg.Template.Language.Code = name, language
	if len(body) > 0 {
		comp := WhatsAppComponent{Type: "body"}
		for _, p := range body {
			comp.Parameters = append(comp.Parameters, WhatsAppParameter{Type: "text", Text: p})
		}
		msg.Template.Components = []WhatsAppComponent{comp}
	}
	var ans whatsAppAnswer
	if err := c.graphPost(ctx, phoneNumberID+"/messages", token, msg, &ans); err != nil {
		return "", err
	}
	if len(ans.Messages) == 0 || ans.Messages[0].ID == "" {
		return "", fmt.Errorf("WhatsApp answered a send without a message id")
	}
	return ans.Messages[0].ID, nil
}
