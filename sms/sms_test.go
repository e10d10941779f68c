package sms_test

import (
	"context"
	"testing"

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
