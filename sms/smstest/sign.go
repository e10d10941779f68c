package smstest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Twilio signs webhooks with HMAC-SHA1; the fake carrier must too
	"encoding/base64"
	"encoding/hex"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SignatureHeader is the header the provider signs its webhooks in.
const SignatureHeader = "X-Twilio-Signature"

// Sign is the X-Twilio-Signature the provider sends with a POST of form to fullURL, signed
// with the fake's AuthToken.
func (s *Server) Sign(fullURL string, form url.Values) string {
	return SignWith(AuthToken, fullURL, form)
}

// SignWith computes the provider's webhook signature with authToken: the base64 HMAC-SHA1
// of fullURL (exactly as configured, query string included) followed by each POST
// parameter's name and value with no delimiter, names sorted. A name with several values
// adds name+value once per value, values sorted, as the provider's own helper libraries
// do. It is written here from the provider's description, not with the SDK's validator,
// so a test of one against the other checks both.
func SignWith(authToken, fullURL string, form url.Values) string {
	var b strings.Builder
	b.WriteString(fullURL)
	for _, name := range slices.Sorted(maps.Keys(form)) {
		for _, v := range slices.Sorted(slices.Values(form[name])) {
			b.WriteString(name)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Post POSTs form to fullURL as the provider delivers a webhook: form-encoded and signed
// with the fake's AuthToken. A nil client is http.DefaultClient.
func (s *Server) Post(ctx context.Context, client *http.Client, fullURL string, form url.Values) (*http.Response, error) {
	return PostWithSignature(ctx, client, fullURL, form, s.Sign(fullURL, form))
}

// PostWithSignature POSTs form to fullURL with signature as its X-Twilio-Signature, for
// tests of what a forged or stale signature gets; an empty signature sends no header.
func PostWithSignature(ctx context.Context, client *http.Client, fullURL string, form url.Values, signature string) (*http.Response, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fullURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	req.Header.Set("X-Home-Region", "us1")
	if signature != "" {
		req.Header.Set(SignatureHeader, signature)
	}
	return client.Do(req)
}

// InboundForm is the form the provider POSTs to a number's messaging webhook when it
// receives an SMS, field for field. An empty messageSID is a fresh random one.
func InboundForm(from, to, body, messageSID string) url.Values {
	if messageSID == "" {
		messageSID = NewSID("SM")
	}
	fp, tp := placeOf(from), placeOf(to)
	return url.Values{
		"ToCountry":     {tp.country},
		"ToState":       {tp.state},
		"SmsMessageSid": {messageSID},
		"NumMedia":      {"0"},
		"ToCity":        {tp.city},
		"FromZip":       {fp.zip},
		"SmsSid":        {messageSID},
		"FromState":     {fp.state},
		"SmsStatus":     {"received"},
		"FromCity":      {fp.city},
		"Body":          {body},
		"FromCountry":   {fp.country},
		"To":            {to},
		"ToZip":         {tp.zip},
		"NumSegments":   {strconv.Itoa(segments(body))},
		"MessageSid":    {messageSID},
		"AccountSid":    {AccountSID},
		"From":          {from},
		"ApiVersion":    {"2010-04-01"},
	}
}

// StatusForm is the form the provider POSTs to a message's StatusCallback when its status
// changes; undelivered and failed carry the provider's error code 30003 (unreachable
// destination handset).
func StatusForm(messageSID, status, from, to string) url.Values {
	form := url.Values{
		"MessageSid":    {messageSID},
		"SmsSid":        {messageSID},
		"MessageStatus": {status},
		"SmsStatus":     {status},
		"AccountSid":    {AccountSID},
		"From":          {from},
		"To":            {to},
		"ApiVersion":    {"2010-04-01"},
	}
	if status == "undelivered" || status == "failed" {
		form.Set("ErrorCode", "30003")
	}
	return form
}

// NewSID is a random provider id with prefix (SM for a message, PN for a number): the
// prefix and 32 hexadecimal digits.
func NewSID(prefix string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// place is where the provider geolocates a number; it sends empty fields when it cannot.
type place struct{ country, state, city, zip string }

func placeOf(e164 string) place {
	switch {
	case strings.HasPrefix(e164, "+1415"):
		return place{"US", "CA", "SAN FRANCISCO", "94103"}
	case strings.HasPrefix(e164, "+1212"):
		return place{"US", "NY", "NEW YORK", "10007"}
	case strings.HasPrefix(e164, "+1604"):
		return place{"CA", "BC", "VANCOUVER", ""}
	case strings.HasPrefix(e164, "+1"):
		return place{country: "US"}
	case strings.HasPrefix(e164, "+44"):
		return place{country: "GB"}
	}
	return place{}
}

// segments is a close count of the SMS segments of body (ASCII as GSM-7: 160, then 153
// each; anything else as UCS-2: 70, then 67 each); sms.Segments is the exact one, not
// imported so that the fake does not depend on the package it fakes for.
func segments(body string) int {
	single, multi, n := 160, 153, utf8.RuneCountInString(body)
	for _, r := range body {
		if r >= utf8.RuneSelf {
			single, multi = 70, 67
			break
		}
	}
	if n <= single {
		return 1
	}
	return (n + multi - 1) / multi
}
