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

// OutboundCall is a call to place: from a number of the account to a person, whose flow the
// carrier fetches from URL (POST) once answered, and whose end it reports to StatusCallback.
type OutboundCall struct {
	From, To       string
	URL            string
	StatusCallback string
}

// Answering-machine detection as outbound calls ask it: the carrier waits for a machine's
// greeting to end (the beep, or silence) before it fetches the call's URL with AnsweredBy
// (human, machine_end_beep, machine_end_silence, machine_end_other, fax, unknown), so a
// voicemail drop starts after the beep. Synchronous (AsyncAmd false): a person hears a
// short silence while detection runs, and the flow knows who answered from its first request.
const (
	MachineDetection        = "DetectMessageEnd"
	MachineDetectionTimeout = 30 // seconds
	ringTimeout             = 30 // seconds the call rings before it is no-answer
)

// PlaceCall places an outbound call with answering-machine detection and returns its CallSid.
func (p *Provider) PlaceCall(ctx context.Context, c OutboundCall) (string, error) {
	if !p.Configured() {
		return "", ErrNotConfigured()
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	params := (&openapi.CreateCallParams{}).SetTo(c.To).SetFrom(c.From).SetUrl(c.URL).SetMethod(http.MethodPost).
		SetStatusCallback(c.StatusCallback).SetStatusCallbackMethod(http.MethodPost).
		SetMachineDetection(MachineDetection).SetMachineDetectionTimeout(MachineDetectionTimeout).SetAsyncAmd("false").
		SetTimeout(ringTimeout)
	call, err := p.rest.Api.CreateCall(params)
	if err != nil {
		return "", providerError(err)
	}
	return deref(call.Sid), nil
}
