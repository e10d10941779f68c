package smstest

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// NumberVoiceURL is where the voice webhook of the account's number e164 points; empty when
// unset or not on the account.
func (s *Server) NumberVoiceURL(e164 string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.numberByPhone(e164); n != nil {
		return n.voiceURL
	}
	return ""
}

// NumberStatusCallback is where the call status callback of the account's number e164 points.
func (s *Server) NumberStatusCallback(e164 string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.numberByPhone(e164); n != nil {
		return n.statusCallback
	}
	return ""
}

// CallForm is the form the provider POSTs to a number's voice webhook when a call comes in
// (status ringing), field for field.
func CallForm(callSID, from, to, status string) url.Values {
	fp, tp := placeOf(from), placeOf(to)
	return url.Values{
		"AccountSid":    {AccountSID},
		"ApiVersion":    {"2010-04-01"},
		"CallSid":       {callSID},
		"CallStatus":    {status},
		"Called":        {to},
		"CalledCountry": {tp.country},
		"CalledState":   {tp.state},
		"Caller":        {from},
		"CallerCountry": {fp.country},
		"CallerState":   {fp.state},
		"Direction":     {"inbound"},
		"From":          {from},
		"FromCountry":   {fp.country},
		"To":            {to},
		"ToCountry":     {tp.country},
	}
}

// GatherForm is what a <Gather input="speech"> POSTs to its action: the call's fields, and
// SpeechResult with its Confidence when the caller said something (speech "" is a gather
// that heard nothing, which the provider posts without them).
func GatherForm(callSID, from, to, speech string) url.Values {
	form := CallForm(callSID, from, to, "in-progress")
	if speech != "" {
		form.Set("SpeechResult", speech)
		form.Set("Confidence", "0.92")
	}
	return form
}

// DialForm is what a <Dial> POSTs to its action when the dialled call ends: DialCallStatus
// (completed, busy, no-answer, failed, canceled) and, once answered, its duration.
func DialForm(callSID, from, to, dialStatus string, seconds int) url.Values {
	form := CallForm(callSID, from, to, "in-progress")
	form.Set("DialCallStatus", dialStatus)
	form.Set("DialCallSid", NewSID("CA"))
	if dialStatus == "completed" {
		form.Set("DialCallDuration", strconv.Itoa(seconds))
	}
	return form
}

// RecordForm is what a <Record> POSTs to its action: the recording's URL and length.
func RecordForm(callSID, from, to string, seconds int) url.Values {
	form := CallForm(callSID, from, to, "in-progress")
	rec := NewSID("RE")
	form.Set("RecordingSid", rec)
	form.Set("RecordingUrl", "https://api.twilio.com/2010-04-01/Accounts/"+AccountSID+"/Recordings/"+rec)
	form.Set("RecordingDuration", strconv.Itoa(seconds))
	form.Set("Digits", "hangup")
	return form
}

// CallStatusForm is the call's status callback: its final status and, when it was answered,
// CallDuration in seconds.
func CallStatusForm(callSID, from, to, status string, seconds int) url.Values {
	form := CallForm(callSID, from, to, status)
	form.Set("Timestamp", "Fri, 27 Nov 2026 12:00:00 +0000")
	form.Set("CallbackSource", "call-progress-events")
	form.Set("SequenceNumber", "0")
	if status == "completed" {
		form.Set("CallDuration", strconv.Itoa(seconds))
		form.Set("Duration", strconv.Itoa((seconds+59)/60))
	}
	return form
}

// PlacedCall is an outbound call the fake was asked to place (POST Calls.json), with the
// request's form as the SDK sent it (MachineDetection, AsyncAmd, Url, StatusCallback, ...).
type PlacedCall struct {
	SID, From, To       string
	URL, StatusCallback string
	Form                url.Values
}

// Calls are the outbound calls placed so far, in order.
func (s *Server) Calls() []PlacedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PlacedCall(nil), s.calls...)
}

func (s *Server) createCall(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	to := r.PostForm.Get("To")
	if s.failTo[to] {
		writeError(w, http.StatusBadRequest, 21211, "The 'To' number "+to+" is not a valid phone number.")
		return
	}
	if r.PostForm.Get("Url") == "" && r.PostForm.Get("Twiml") == "" && r.PostForm.Get("ApplicationSid") == "" {
		writeError(w, http.StatusBadRequest, 21205, "Url parameter is required.")
		return
	}
	c := PlacedCall{SID: fmt.Sprintf("CA%032d", len(s.calls)+1), From: r.PostForm.Get("From"), To: to, URL: r.PostForm.Get("Url"),
		StatusCallback: r.PostForm.Get("StatusCallback"), Form: r.PostForm}
	s.calls = append(s.calls, c)
	at := time.Now().UTC().Format(time.RFC1123Z)
	writeJSON(w, http.StatusCreated, map[string]any{"sid": c.SID, "account_sid": AccountSID, "from": c.From, "to": c.To,
		"status": "queued", "direction": "outbound-api", "api_version": "2010-04-01", "date_created": at, "date_updated": at,
		"start_time": nil, "end_time": nil, "duration": nil, "price": nil, "uri": accountPath + "Calls/" + c.SID + ".json"})
}

// AnsweredForm is what the carrier POSTs to an outbound call's URL once it is answered and
// answering-machine detection has its verdict: answeredBy is human, machine_end_beep,
// machine_end_silence, machine_end_other, fax or unknown. from is the number that called.
func AnsweredForm(callSID, from, to, answeredBy string) url.Values {
	form := CallForm(callSID, from, to, "in-progress")
	form.Set("Direction", "outbound-api")
	form.Set("AnsweredBy", answeredBy)
	form.Set("MachineDetectionDuration", "2830")
	return form
}
