package msgappstest

import (
	"encoding/json"
	"strconv"
)

func mustJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return raw
}

// WhatsAppMessage is a WhatsApp Business Account webhook carrying one message of type kind
// ("text" with body as its text; another kind with an empty object) from waID, named name,
// to the phone number phoneNumberID.
func WhatsAppMessage(phoneNumberID, waID, name, messageID, kind, body string) []byte {
	msg := map[string]any{"from": waID, "id": messageID, "timestamp": "1764270000", "type": kind}
	if kind == "text" {
		msg["text"] = map[string]any{"body": body}
	} else {
		msg[kind] = map[string]any{"id": "media-1", "mime_type": "image/jpeg"}
	}
	return mustJSON(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": "102290129340398", "changes": []any{map[string]any{"field": "messages", "value": map[string]any{
			"messaging_product": "whatsapp",
			"metadata":          map[string]any{"display_phone_number": "15550783881", "phone_number_id": phoneNumberID},
			"contacts":          []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": waID}},
			"messages":          []any{msg},
		}}},
	}}})
}

// WhatsAppStatus is a webhook reporting a sent message's status (sent, delivered, read, failed).
func WhatsAppStatus(phoneNumberID, messageID, recipient, status string) []byte {
	return mustJSON(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{
		"id": "102290129340398", "changes": []any{map[string]any{"field": "messages", "value": map[string]any{
			"messaging_product": "whatsapp",
			"metadata":          map[string]any{"display_phone_number": "15550783881", "phone_number_id": phoneNumberID},
			"statuses":          []any{map[string]any{"id": messageID, "status": status, "timestamp": "1764270001", "recipient_id": recipient}},
		}}},
	}}})
}

// MessagingText is a Messenger (object "page") or Instagram (object "instagram") webhook with
// one text from sender to the account.
func MessagingText(object, account, sender, mid, text string) []byte {
	return messaging(object, account, sender, map[string]any{"mid": mid, "text": text})
}

// MessagingAttachment is the same with an attachment of a type (image, audio, video, file).
func MessagingAttachment(object, account, sender, mid, kind string) []byte {
	return messaging(object, account, sender, map[string]any{"mid": mid,
		"attachments": []any{map[string]any{"type": kind, "payload": map[string]any{"url": "https://cdn.example/x"}}}})
}

func messaging(object, account, sender string, message map[string]any) []byte {
	return mustJSON(map[string]any{"object": object, "entry": []any{map[string]any{"id": account, "time": 1764270000000,
		"messaging": []any{map[string]any{"sender": map[string]any{"id": sender}, "recipient": map[string]any{"id": account},
			"timestamp": 1764270000000, "message": message}}}}})
}

// TelegramText is an update with a private chat's text from a person (their chat id is their
// user id).
func TelegramText(updateID, chatID, messageID int64, firstName, text string) []byte {
	return telegram(updateID, chatID, messageID, firstName, map[string]any{"text": text})
}

// TelegramSticker is an update with a sticker.
func TelegramSticker(updateID, chatID, messageID int64, firstName string) []byte {
	return telegram(updateID, chatID, messageID, firstName, map[string]any{"sticker": map[string]any{"file_id": "CAAC", "emoji": "👍"}})
}

func telegram(updateID, chatID, messageID int64, firstName string, content map[string]any) []byte {
	msg := map[string]any{"message_id": messageID, "date": 1764270000,
		"from": map[string]any{"id": chatID, "is_bot": false, "first_name": firstName, "language_code": "en"},
		"chat": map[string]any{"id": chatID, "type": "private", "first_name": firstName}}
	for k, v := range content {
		msg[k] = v
	}
	return mustJSON(map[string]any{"update_id": updateID, "message": msg})
}

// ChatID writes a chat id as the channel keeps it.
func ChatID(id int64) string { return strconv.FormatInt(id, 10) }
