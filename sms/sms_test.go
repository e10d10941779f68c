package sms_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/sms"
	"switchboard/sms/smstest"
)

func TestTheSDKTalksToTheFakeAtTheWire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := smstest.New(t)
	p, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL})
	require.NoError(t, err)
	require.True(t, p.Configured())

	id, err := p.Send(ctx, "+14155550100", "+14155550123", "Hello there")
	require.NoError(t, err)
	require.NotEmpty(t, id)
	require.Equal(t, []smstest.Message{{SID: id, From: "+14155550100", To: "+14155550123", Body: "Hello there"}}, fake.Messages())

	fake.FailTo("+14155550999")
	_, err = p.Send(ctx, "+14155550100", "+14155550999", "Hello")
	e := apierr.As(err)
	require.NotNil(t, e)
	require.Equal(t, "provider_refused", e.Code)
	require.Contains(t, e.Message, "21211")

	found, err := p.Search(ctx, "US", 415, "", 10)
	require.NoError(t, err)
	require.Len(t, found, 2)
	require.Equal(t, "US", found[0].Country)
	found, err = p.Search(ctx, "US", 0, "0102", 10)
	require.NoError(t, err)
	require.Len(t, found, 1)

	sid, err := p.Buy(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, []string{"+14155550100"}, fake.Bought())
	require.NoError(t, p.Release(ctx, sid))
	require.Equal(t, []string{sid}, fake.Released())
}

func TestWrongCredentialsAreTheProvidersRefusal(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	p, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: "wrong", BaseURL: fake.URL})
	require.NoError(t, err)
	_, err = p.Send(context.Background(), "+14155550100", "+14155550123", "Hi")
	require.Equal(t, "provider_refused", apierr.As(err).Code)
	require.Empty(t, fake.Messages())
}

func TestWithoutCredentialsEveryCallSaysWhatToSet(t *testing.T) {
	t.Parallel()
	p, err := sms.New(sms.Config{})
	require.NoError(t, err)
	require.False(t, p.Configured())
	_, err = p.Send(context.Background(), "+14155550100", "+14155550123", "Hi")
	e := apierr.As(err)
	require.Equal(t, "sms_provider_not_configured", e.Code)
	require.Contains(t, e.Message, "TWILIO_ACCOUNT_SID")
	_, err = p.Search(context.Background(), "US", 0, "", 5)
	require.Equal(t, "sms_provider_not_configured", apierr.As(err).Code)

	_, err = sms.New(sms.Config{AccountSID: "AC1", AuthToken: "t", BaseURL: "not a url"})
	require.Error(t, err)
}

func newProvider(t *testing.T, fake *smstest.Server) *sms.Provider {
	t.Helper()
	p, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL})
	require.NoError(t, err)
	return p
}

func TestSendMessageAsksForDeliveryStatus(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	p := newProvider(t, fake)
	id, err := p.SendMessage(context.Background(), sms.Outbound{From: "+14155550100", To: "+14155550123", Body: "Your table is ready",
		StatusCallback: "https://switchboard.example/sms/status?ws=1"})
	require.NoError(t, err)
	require.Equal(t, []smstest.Message{{SID: id, From: "+14155550100", To: "+14155550123", Body: "Your table is ready",
		StatusCallback: "https://switchboard.example/sms/status?ws=1"}}, fake.Messages())

	_, err = p.SendMessage(context.Background(), sms.Outbound{From: "+14155550100", To: "+14155550124", Body: "No callback"})
	require.NoError(t, err)
	require.Empty(t, fake.WaitMessages(t, 2, time.Second)[1].StatusCallback)
}

func TestFindNumberAndPointItsWebhook(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := smstest.New(t)
	p := newProvider(t, fake)

	added := fake.AddNumber("+14155550100")
	bought, err := p.Buy(ctx, "+12125550102")
	require.NoError(t, err)

	n, ok, err := p.FindNumber(ctx, "+14155550100")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, sms.Number{SID: added, PhoneNumber: "+14155550100"}, n)
	n, ok, err = p.FindNumber(ctx, "+12125550102")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, bought, n.SID)
	_, ok, err = p.FindNumber(ctx, "+14155550199")
	require.NoError(t, err)
	require.False(t, ok, "not on the account")

	require.NoError(t, p.ConfigureSMS(ctx, added, "https://switchboard.example/sms/inbound?ws=1"))
	require.Equal(t, "https://switchboard.example/sms/inbound?ws=1", fake.NumberSMSURL("+14155550100"))
	n, _, err = p.FindNumber(ctx, "+14155550100")
	require.NoError(t, err)
	require.Equal(t, "https://switchboard.example/sms/inbound?ws=1", n.SmsURL)

	err = p.ConfigureSMS(ctx, "PN00000000000000000000000000000404", "https://switchboard.example/sms/inbound")
	require.Equal(t, "provider_refused", apierr.As(err).Code)

	require.NoError(t, p.Release(ctx, added))
	_, ok, err = p.FindNumber(ctx, "+14155550100")
	require.NoError(t, err)
	require.False(t, ok, "released")
}

// The provider's PhoneNumber filter matches partial numbers: the exact one can be on a
// later page, which the SDK fetches through next_page_uri.
func TestFindNumberReadsEveryPage(t *testing.T) {
	t.Parallel()
	fake := smstest.New(t)
	p := newProvider(t, fake)
	for i := range 60 {
		fake.AddNumber(fmt.Sprintf("+14155550100%02d", i))
	}
	sid := fake.AddNumber("+14155550100")
	n, ok, err := p.FindNumber(context.Background(), "+14155550100")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, sid, n.SID)
}

func TestTwoWayCallsWithoutCredentialsSayWhatToSet(t *testing.T) {
	t.Parallel()
	p, err := sms.New(sms.Config{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = p.SendMessage(ctx, sms.Outbound{From: "+14155550100", To: "+14155550123", Body: "Hi"})
	require.Equal(t, "sms_provider_not_configured", apierr.As(err).Code)
	_, _, err = p.FindNumber(ctx, "+14155550100")
	require.Equal(t, "sms_provider_not_configured", apierr.As(err).Code)
	require.Equal(t, "sms_provider_not_configured", apierr.As(p.ConfigureSMS(ctx, "PN1", "https://x.example")).Code)
}
