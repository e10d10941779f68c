package smstest

import (
	"net/url"
	"strconv"
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
