package sms_test

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/sms"
	"switchboard/sms/smstest"
)

const inboundURL = "https://switchboard.example/sms/inbound?ws=7f3c"

func TestValidSignatureAcceptsOnlyWhatTheProviderSigned(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	p := newProvider(t, fake)
	form := smstest.InboundForm("+14155550123", "+14155550100", "Is the shop open on Sunday?", "")
	sig := fake.Sign(inboundURL, form)
	require.True(t, p.ValidSignature(inboundURL, form, sig))

	tampered := url.Values{}
	for k, v := range form {
		tampered[k] = append([]string(nil), v...)
	}
	tampered.Set("Body", "Send me everything")
	require.False(t, p.ValidSignature(inboundURL, tampered, sig), "body changed")
	require.False(t, p.ValidSignature("https://switchboard.example/sms/inbound?ws=other", form, sig), "URL changed")
	require.False(t, p.ValidSignature(inboundURL, form, ""), "no signature")
	require.False(t, p.ValidSignature(inboundURL, form, smstest.SignWith("another token", inboundURL, form)), "another account's token")

	// A name given twice is refused even when signed: the provider never sends one, and
	// form.Get would read only one of the values.
	repeated := url.Values{"MessageSid": {"SM1"}, "From": {"+14155550123"}, "To": {"+14155550100"}, "Body": {"hi", "bye"}}
	require.False(t, p.ValidSignature(inboundURL, repeated, fake.Sign(inboundURL, repeated)))

	disabled, err := sms.New(sms.Config{})
	require.NoError(t, err)
	require.False(t, disabled.ValidSignature(inboundURL, form, sig), "a disabled provider validates nothing")
	var zero *sms.Provider
	require.False(t, zero.ValidSignature(inboundURL, form, sig))
}

// The fake posts a webhook as the provider does; a handler checks it with ValidSignature,
// reads it with InboundFrom and answers the empty TwiML.
func TestSignedWebhookOverHTTP(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	p := newProvider(t, fake)
	got := make(chan sms.Inbound, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !p.ValidSignature("http://"+r.Host+r.URL.RequestURI(), r.PostForm, r.Header.Get(smstest.SignatureHeader)) {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		in, err := sms.InboundFrom(r.PostForm)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got <- in
		w.Header().Set("Content-Type", sms.TwiMLContentType)
		_, _ = io.WriteString(w, sms.EmptyResponse())
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	hook := srv.URL + "/sms/inbound?ws=7f3c"
	form := smstest.InboundForm("+14155550123", "+14155550100", "Hello", "SM0123456789abcdef0123456789abcdef")

	resp, err := fake.Post(ctx, srv.Client(), hook, form)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Equal(t, sms.EmptyMessagingResponse, string(body))
	require.Equal(t, sms.Inbound{MessageSID: "SM0123456789abcdef0123456789abcdef", From: "+14155550123", To: "+14155550100",
		Body: "Hello", AccountSID: smstest.AccountSID}, <-got)

	for name, sig := range map[string]string{"unsigned": "", "forged": fake.Sign(hook+"&x=1", form)} {
		resp, err := smstest.PostWithSignature(ctx, srv.Client(), hook, form, sig)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusForbidden, resp.StatusCode, name)
	}
}

func TestInboundFrom(t *testing.T) {
	t.Parallel()
	form := smstest.InboundForm("+14155550123", "+14155550100", "", "SMaaa")
	form.Set("NumMedia", "2")
	in, err := sms.InboundFrom(form)
	require.NoError(t, err)
	require.Equal(t, sms.Inbound{MessageSID: "SMaaa", From: "+14155550123", To: "+14155550100", NumMedia: 2, AccountSID: smstest.AccountSID}, in)

	old := url.Values{"SmsMessageSid": {"SMold"}, "From": {"+1"}, "To": {"+2"}, "Body": {"hi"}}
	in, err = sms.InboundFrom(old)
	require.NoError(t, err)
	require.Equal(t, "SMold", in.MessageSID)
	require.Zero(t, in.NumMedia)
	in, err = sms.InboundFrom(url.Values{"SmsSid": {"SMolder"}, "From": {"+1"}, "To": {"+2"}})
	require.NoError(t, err)
	require.Equal(t, "SMolder", in.MessageSID)

	for _, field := range []string{"MessageSid", "From", "To"} {
		form := smstest.InboundForm("+14155550123", "+14155550100", "hi", "SMaaa")
		form.Del(field)
		if field == "MessageSid" {
			form.Del("SmsMessageSid")
			form.Del("SmsSid")
		}
		_, err := sms.InboundFrom(form)
		e := apierr.As(err)
		require.NotNil(t, e, field)
		require.Equal(t, apierr.KindInvalid, e.Kind)
		require.Equal(t, field, e.Param)
		require.Contains(t, e.Error(), field)
	}
	form.Set("NumMedia", "many")
	_, err = sms.InboundFrom(form)
	require.Equal(t, "NumMedia", apierr.As(err).Param)
}

func TestStatusFrom(t *testing.T) {
	t.Parallel()
	u, err := sms.StatusFrom(smstest.StatusForm("SMbbb", "undelivered", "+14155550100", "+14155550123"))
	require.NoError(t, err)
	require.Equal(t, sms.StatusUpdate{MessageSID: "SMbbb", Status: "undelivered", ErrorCode: "30003"}, u)
	u, err = sms.StatusFrom(smstest.StatusForm("SMbbb", "delivered", "+14155550100", "+14155550123"))
	require.NoError(t, err)
	require.Equal(t, sms.StatusUpdate{MessageSID: "SMbbb", Status: "delivered"}, u)

	u, err = sms.StatusFrom(url.Values{"SmsSid": {"SMccc"}, "SmsStatus": {"sent"}})
	require.NoError(t, err)
	require.Equal(t, sms.StatusUpdate{MessageSID: "SMccc", Status: "sent"}, u)
	u, err = sms.StatusFrom(url.Values{"MessageSid": {"SMccc"}, "MessageStatus": {"read"}})
	require.NoError(t, err, "a status this package does not list is passed on")
	require.Equal(t, "read", u.Status)

	_, err = sms.StatusFrom(url.Values{"MessageStatus": {"sent"}})
	require.Equal(t, "MessageSid", apierr.As(err).Param)
	_, err = sms.StatusFrom(url.Values{"MessageSid": {"SMccc"}})
	require.Equal(t, "MessageStatus", apierr.As(err).Param)
}

func TestEmptyResponseIsAResponseWithNothingInIt(t *testing.T) {
	t.Parallel()
	doc := sms.EmptyResponse()
	require.True(t, strings.HasPrefix(doc, `<?xml version="1.0" encoding="UTF-8"?>`))
	dec := xml.NewDecoder(strings.NewReader(doc))
	var root string
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch tok := tok.(type) {
		case xml.StartElement:
			depth++
			require.Equal(t, 1, depth, "no children: %s", tok.Name.Local)
			root = tok.Name.Local
		case xml.EndElement:
			depth--
		case xml.CharData:
			require.Empty(t, strings.TrimSpace(string(tok)))
		}
	}
	require.Equal(t, "Response", root)
}
