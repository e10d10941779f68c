package sms

import (
	"net/url"
	"strconv"

	twclient "github.com/twilio/twilio-go/client"

	"switchboard/apierr"
)

// EmptyMessagingResponse is the TwiML answer to an inbound SMS that replies nothing in the
// webhook's response (replies go out through the REST API, with a status callback). It is
// written out rather than built with the SDK's twiml package, which needs
// github.com/beevik/etree, a module this one does not require.
const EmptyMessagingResponse = `<?xml version="1.0" encoding="UTF-8"?><Response></Response>`

// TwiMLContentType is the content type of a TwiML answer.
const TwiMLContentType = "text/xml; charset=utf-8"

// EmptyResponse is EmptyMessagingResponse, for callers that build the answer.
func EmptyResponse() string { return EmptyMessagingResponse }

// ValidSignature reports whether signature (the X-Twilio-Signature header) is the
// provider's signature of a webhook POSTed to fullURL with form. A disabled provider
// validates nothing.
//
// fullURL is the URL exactly as configured at the provider (scheme, host, path and query
// string; the SDK's validator also tries it with and without the default port), so behind
// a proxy it is the public URL, not r.URL. form is the POST body only (r.PostForm, not
// r.Form, which would add the query string's parameters a second time).
//
// The provider signs the URL followed by every POST parameter's name and value, names
// sorted. The SDK's validator takes one value per name, and the provider's messaging
// webhooks never repeat a name (media arrive as MediaUrl0, MediaUrl1, ...), so a form that
// repeats a name (or holds a name without a value) is refused rather than flattened:
// keeping only one value would let someone reorder or split the values of a signed form
// so that form.Get reads one that was never signed.
func (p *Provider) ValidSignature(fullURL string, form url.Values, signature string) bool {
	if !p.Configured() || p.authToken == "" || signature == "" {
		return false
	}
	params := make(map[string]string, len(form))
	for name, values := range form {
		if len(values) != 1 {
			return false
		}
		params[name] = values[0]
	}
	v := twclient.NewRequestValidator(p.authToken)
	return v.Validate(fullURL, params, signature)
}

// Inbound is an SMS the provider received on one of the account's numbers.
type Inbound struct {
	MessageSID string
	From, To   string
	Body       string // may be empty: a picture message without text
	NumMedia   int
	AccountSID string
}

// InboundFrom reads the provider's inbound SMS webhook form. MessageSid, From and To are
// required; older webhooks name the message SmsMessageSid or SmsSid.
func InboundFrom(form url.Values) (Inbound, error) {
	in := Inbound{
		MessageSID: firstOf(form, "MessageSid", "SmsMessageSid", "SmsSid"),
		From:       form.Get("From"),
		To:         form.Get("To"),
		Body:       form.Get("Body"),
		AccountSID: form.Get("AccountSid"),
	}
	for _, f := range []struct{ name, value string }{{"MessageSid", in.MessageSID}, {"From", in.From}, {"To", in.To}} {
		if f.value == "" {
			return Inbound{}, missingField(f.name)
		}
	}
	if raw := form.Get("NumMedia"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return Inbound{}, apierr.Invalid("NumMedia", "invalid_webhook", "The provider's webhook has NumMedia %q, not a count.", raw)
		}
		in.NumMedia = n
	}
	return in, nil
}

// StatusUpdate is a delivery status callback of a message sent with a StatusCallback.
// Status is the provider's word for it: queued, sending, sent, delivered, undelivered,
// failed (and accepted, scheduled, read, receiving, received, canceled); any non-empty
// value is accepted, so a status the provider adds later is passed on, not refused.
// ErrorCode is the provider's error code of an undelivered or failed message, else empty.
type StatusUpdate struct {
	MessageSID string
	Status     string
	ErrorCode  string
}

// StatusFrom reads the provider's status callback form: MessageSid (or SmsSid) and
// MessageStatus (or SmsStatus) are required.
func StatusFrom(form url.Values) (StatusUpdate, error) {
	u := StatusUpdate{
		MessageSID: firstOf(form, "MessageSid", "SmsSid"),
		Status:     firstOf(form, "MessageStatus", "SmsStatus"),
		ErrorCode:  form.Get("ErrorCode"),
	}
	if u.MessageSID == "" {
		return StatusUpdate{}, missingField("MessageSid")
	}
	if u.Status == "" {
		return StatusUpdate{}, missingField("MessageStatus")
	}
	return u, nil
}

// firstOf is the value of the first of names the form has non-empty.
func firstOf(form url.Values, names ...string) string {
	for _, n := range names {
		if v := form.Get(n); v != "" {
			return v
		}
	}
	return ""
}

func missingField(name string) error {
	return apierr.Invalid(name, "invalid_webhook", "The provider's webhook has no %s.", name)
}
