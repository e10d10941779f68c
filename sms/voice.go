package sms

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	openapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// ConfigureVoice points the voice webhook of the number sid at voiceURL, and its call status
// callback at statusURL: the carrier POSTs every call to the number there, and how it ended.
func (p *Provider) ConfigureVoice(ctx context.Context, sid, voiceURL, statusURL string) error {
	if !p.Configured() {
		return ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	params := (&openapi.UpdateIncomingPhoneNumberParams{}).SetVoiceUrl(voiceURL).SetVoiceMethod(http.MethodPost).
		SetStatusCallback(statusURL).SetStatusCallbackMethod(http.MethodPost)
	if _, err := p.rest.Api.UpdateIncomingPhoneNumber(sid, params); err != nil {
		return providerError(err)
	}
	return nil
}

// Call is a call the carrier tells a voice webhook about (form-encoded, signed).
type Call struct {
	SID      string
	From, To string
	Status   string // queued, ringing, in-progress, completed, busy, no-answer, failed, canceled
	// Duration is CallDuration, in seconds, on a completed call's status callback.
	Duration int
	// AnsweredBy is answering-machine detection's verdict on an outbound call (human,
	// machine_start, machine_end_beep, fax, unknown...).
	AnsweredBy string
}

// CallFrom reads the call fields of a voice webhook's form.
func CallFrom(form map[string][]string) (Call, error) {
	get := func(k string) string {
		if v := form[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	c := Call{SID: get("CallSid"), From: get("From"), To: get("To"), Status: get("CallStatus"), AnsweredBy: get("AnsweredBy")}
	if c.SID == "" {
		return c, errMissing("CallSid")
	}
	if d := get("CallDuration"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return c, errInvalid("CallDuration")
		}
		c.Duration = n
	}
	return c, nil
}

type fieldError struct{ field, what string }

func (e fieldError) Error() string { return "the webhook's " + e.field + " is " + e.what + "." }

func errMissing(f string) error { return fieldError{f, "missing"} }
func errInvalid(f string) error { return fieldError{f, "not a number of seconds"} }
