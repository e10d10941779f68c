package smstest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	twclient "github.com/twilio/twilio-go/client"

	"switchboard/sms"
	"switchboard/sms/smstest"
)

// flatten is the SDK validator's one value per name.
func flatten(form url.Values) map[string]string {
	m := map[string]string{}
	for k, v := range form {
		m[k] = v[0]
	}
	return m
}

func TestSignIsWhatTheSDKValidates(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	v := twclient.NewRequestValidator(smstest.AuthToken)
	const hook = "https://switchboard.example/sms/inbound?ws=7f3c"
	form := smstest.InboundForm("+14155550123", "+14155550100", "Open on Sunday? 🙂", "")
	sig := fake.Sign(hook, form)
	require.True(t, v.Validate(hook, flatten(form), sig))
	require.True(t, v.ValidateBody(hook, []byte(form.Encode()), sig), "as the body is posted")

	tampered := url.Values{}
	for k, vs := range form {
		tampered[k] = slices.Clone(vs)
	}
	tampered.Set("From", "+14155550999")
	require.False(t, v.Validate(hook, flatten(tampered), sig), "form changed")
	tampered = url.Values{}
	for k, vs := range form {
		tampered[k] = slices.Clone(vs)
	}
	tampered.Set("Extra", "")
	require.False(t, v.Validate(hook, flatten(tampered), sig), "parameter added")
	require.False(t, v.Validate("https://switchboard.example/sms/inbound?ws=other", flatten(form), sig), "URL changed")
	other := twclient.NewRequestValidator("other")
	require.False(t, other.Validate(hook, flatten(form), sig), "another token")

	// The SDK's own test vector.
	params := url.Values{"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"}, "Caller": {"+14158675309"},
		"From": {"+14158675309"}, "ReasonConferenceEnded": {"test"}, "Reason": {"Participant"}}
	require.Equal(t, "vOEb5UThFn24KEfnOFLQY2AE5FY=", smstest.SignWith("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", params))
}

// A name with several values signs name+value per value, values sorted.
func TestSignRepeatedNames(t *testing.T) {
	t.Parallel()
	const hook = "https://switchboard.example/hook"
	require.Equal(t, smstest.SignWith("t", hook, url.Values{"A": {"1A2"}, "B": {"x"}}),
		smstest.SignWith("t", hook, url.Values{"A": {"2", "1"}, "B": {"x"}}))
}

func TestWebhookForms(t *testing.T) {
	t.Parallel()
	in := smstest.InboundForm("+14155550123", "+12125550102", "Hi", "SMaaa")
	names := slices.Sorted(maps.Keys(in))
	require.Equal(t, []string{"AccountSid", "ApiVersion", "Body", "From", "FromCity", "FromCountry", "FromState", "FromZip", "MessageSid",
		"NumMedia", "NumSegments", "SmsMessageSid", "SmsSid", "SmsStatus", "To", "ToCity", "ToCountry", "ToState", "ToZip"}, names)
	require.Equal(t, "received", in.Get("SmsStatus"))
	require.Equal(t, "0", in.Get("NumMedia"))
	require.Equal(t, "SMaaa", in.Get("SmsMessageSid"))
	require.Equal(t, "NY", in.Get("ToState"))
	require.Equal(t, smstest.AccountSID, in.Get("AccountSid"))
	fresh := smstest.InboundForm("+14155550123", "+12125550102", "Hi", "")
	require.Regexp(t, `^SM[0-9a-f]{32}$`, fresh.Get("MessageSid"))
	require.Equal(t, fresh.Get("MessageSid"), fresh.Get("SmsSid"))

	st := smstest.StatusForm("SMaaa", "failed", "+14155550100", "+14155550123")
	require.Equal(t, "failed", st.Get("MessageStatus"))
	require.Equal(t, "failed", st.Get("SmsStatus"))
	require.Equal(t, "30003", st.Get("ErrorCode"))
	require.False(t, smstest.StatusForm("SMaaa", "sent", "+1", "+2").Has("ErrorCode"))
}

// The list pages as the provider's does: next_page_uri is null on the last page and a
// path the SDK appends to its base URL before.
func TestIncomingNumbersPage(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	for i := range 3 {
		fake.AddNumber(fmt.Sprintf("+1415555010%d", i))
	}
	fake.AddNumber("+12125550102")
	require.Equal(t, fake.AddNumber("+14155550100"), fake.AddNumber("+14155550100"), "held already")

	get := func(path string) map[string]any {
		req, err := http.NewRequest(http.MethodGet, fake.URL+path, nil)
		require.NoError(t, err)
		req.SetBasicAuth(smstest.AccountSID, smstest.AuthToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return body
	}
	page := get("/2010-04-01/Accounts/" + smstest.AccountSID + "/IncomingPhoneNumbers.json?PhoneNumber=%2B1415&PageSize=2")
	require.Len(t, page["incoming_phone_numbers"], 2)
	require.EqualValues(t, 2, page["page_size"])
	require.Contains(t, page, "previous_page_uri")
	next, ok := page["next_page_uri"].(string)
	require.True(t, ok)
	page = get(next)
	require.Len(t, page["incoming_phone_numbers"], 1)
	require.EqualValues(t, 1, page["page"])
	require.Nil(t, page["next_page_uri"])
	require.Contains(t, page, "next_page_uri", "null, not absent")
	n := page["incoming_phone_numbers"].([]any)[0].(map[string]any)
	require.Equal(t, "+14155550102", n["phone_number"])
	require.Equal(t, "POST", n["sms_method"])
}

// A slow provider answers late, without holding the fake: the test reads it meanwhile.
func TestSetDelay(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	const delay = 500 * time.Millisecond
	fake.SetDelay(delay)
	p, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL})
	require.NoError(t, err)
	errs := make(chan error, 2)
	start := time.Now()
	for _, to := range []string{"+14155550123", "+14155550124"} {
		go func() {
			_, err := p.Send(context.Background(), "+14155550100", to, "Hi")
			errs <- err
		}()
	}
	time.Sleep(50 * time.Millisecond)
	read := time.Now()
	require.Empty(t, fake.Messages())
	require.Less(t, time.Since(read), delay/2, "not blocked by the waiting sends")
	require.Len(t, fake.WaitMessages(t, 2, 5*time.Second), 2)
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	require.GreaterOrEqual(t, time.Since(start), delay)
}
