package phonenumbers_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/phonenumbers"
	"switchboard/sms"
	"switchboard/sms/smstest"
	"switchboard/store"
	"switchboard/store/storetest"
)

// world is the phone numbers service over its own database, with the SMS provider faked at
// the wire behind the real adapter.
type world struct {
	svc   *phonenumbers.Service
	store *store.Store
	fake  *smstest.Server
	ws    uuid.UUID
}

const startBalance = 5_000_000_000 // $5.00

func newWorld(t *testing.T) *world {
	t.Helper()
	st := storetest.New(t)
	fake := smstest.New(t)
	provider, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", startBalance)
	require.NoError(t, err)
	return &world{svc: phonenumbers.New(st, provider, slog.New(slog.NewTextHandler(io.Discard, nil))), store: st, fake: fake, ws: ws.ID}
}

func price(n int) *int { return &n }

func code(err error) string {
	if e := apierr.As(err); e != nil {
		return e.Code
	}
	return "<not an API error>"
}

func (w *world) balance(t *testing.T) int64 {
	t.Helper()
	ws, err := w.store.WorkspaceByID(context.Background(), w.ws)
	require.NoError(t, err)
	return ws.BalanceNanoUSD
}

func TestSearchQuotesThePrice(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	offers, err := w.svc.Search(ctx, phonenumbers.SearchInput{Country: "us", AreaCode: "415"})
	require.NoError(t, err)
	require.Len(t, offers.Data, 2, "the provider's 415 numbers")
	for _, o := range offers.Data {
		require.Equal(t, "US", o.Country)
		require.Equal(t, 115, o.MonthlyPriceCredits)
		require.Equal(t, "1.15", o.MonthlyPriceUSD)
		require.Contains(t, o.PhoneNumber, "+1415")
	}
	ca, err := w.svc.Search(ctx, phonenumbers.SearchInput{Country: "CA"})
	require.NoError(t, err)
	require.Len(t, ca.Data, 1)
	require.Equal(t, phonenumbers.Prices["CA"], ca.Data[0].MonthlyPriceCredits)

	for in, want := range map[phonenumbers.SearchInput]string{
		{Country: "DE"}:                  "regulatory_bundle_required",
		{Country: "USA"}:                 "invalid_value",
		{Country: "US", AreaCode: "41"}:  "invalid_value",
		{Country: "US", Contains: "abc"}: "invalid_value",
		{Country: "US", Limit: 51}:       "invalid_value",
		{Country: "US", Limit: -1}:       "invalid_value",
	} {
		_, err := w.svc.Search(ctx, in)
		require.Equal(t, want, code(err), "%+v", in)
	}
}

func TestBuyChargesTheFirstMonthAndReleaseGivesTheNumberBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	for in, want := range map[phonenumbers.BuyInput]string{
		{PhoneNumber: "+14155550100", Country: "US"}:                           "missing_parameter",
		{PhoneNumber: "+14155550100", Country: "US", ConfirmPrice: price(100)}: "price_mismatch",
		{PhoneNumber: "+4930123456", Country: "DE", ConfirmPrice: price(100)}:  "regulatory_bundle_required",
		{PhoneNumber: "+4930123456", Country: "US", ConfirmPrice: price(115)}:  "invalid_phone",
		{PhoneNumber: "4155550100", Country: "US", ConfirmPrice: price(115)}:   "invalid_phone",
	} {
		_, err := w.svc.Buy(ctx, w.ws, in)
		require.Equal(t, want, code(err), "%+v", in)
	}
	// The monthly spend cap is checked before the purchase is parked, and again when it runs.
	capped := int64(1_000_000_000) // $1.00, under the number's $1.15
	_, err := w.store.SetMonthlyCapByID(ctx, w.ws, &capped)
	require.NoError(t, err)
	buy := phonenumbers.BuyInput{PhoneNumber: "+14155550100", Country: "US", ConfirmPrice: price(115)}
	err = w.svc.CheckPurchase(ctx, w.ws, buy)
	require.Equal(t, apierr.KindQuota, apierr.As(err).Kind)
	require.Contains(t, apierr.As(err).Message, "monthly spend cap")
	_, err = w.svc.Buy(ctx, w.ws, buy)
	require.Equal(t, apierr.KindQuota, apierr.As(err).Kind)
	_, err = w.store.SetMonthlyCapByID(ctx, w.ws, nil)
	require.NoError(t, err)
	require.Empty(t, w.fake.Bought(), "nothing bought at the provider")
	require.NoError(t, w.svc.CheckPurchase(ctx, w.ws, buy))

	n, err := w.svc.Buy(ctx, w.ws, buy)
	require.NoError(t, err)
	require.Equal(t, "active", n.Status)
	require.Equal(t, "+14155550100", n.PhoneNumber)
	require.Equal(t, 115, n.MonthlyPriceCredits)
	require.Equal(t, []string{"+14155550100"}, w.fake.Bought())
	require.Equal(t, int64(startBalance-1_150_000_000), w.balance(t), "115 credits = $1.15")
	evs, err := w.store.EventsAfter(ctx, w.ws, 0, 100)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	var spend struct {
		Type string
		Data map[string]any
	}
	require.NoError(t, json.Unmarshal(evs[0].Envelope, &spend))
	require.Equal(t, "spend.recorded", spend.Type)
	require.Equal(t, "phone_number", spend.Data["category"])
	require.Equal(t, 1.15, spend.Data["amount_usd"])
	require.Equal(t, n.ID.String(), spend.Data["phone_number_id"])

	// The same number again: the provider sold it, the store refuses it, the provider takes
	// it back and nothing is charged.
	_, err = w.svc.Buy(ctx, w.ws, buy)
	require.Equal(t, "phone_number_taken", code(err))
	require.Len(t, w.fake.Released(), 1)
	require.Equal(t, int64(startBalance-1_150_000_000), w.balance(t))

	released, err := w.svc.Release(ctx, w.ws, n.ID)
	require.NoError(t, err)
	require.Equal(t, "released", released.Status)
	require.NotNil(t, released.ReleasedAt)
	require.Len(t, w.fake.Released(), 2)
	require.Equal(t, int64(startBalance-1_150_000_000), w.balance(t), "the month paid is not refunded")
	_, err = w.svc.Release(ctx, w.ws, n.ID)
	require.Equal(t, "phone_number_released", code(err))
	_, err = w.svc.Release(ctx, w.ws, uuid.New())
	require.Equal(t, apierr.KindNotFound, apierr.As(err).Kind)

	active, err := w.svc.List(ctx, w.ws, "active")
	require.NoError(t, err)
	require.Empty(t, active.Data)
	all, err := w.svc.List(ctx, w.ws, "")
	require.NoError(t, err)
	require.Len(t, all.Data, 1, "a released number stays listed")
}

func TestWithoutAProviderNothingIsBought(t *testing.T) {
	t.Parallel()
	st := storetest.New(t)
	provider, err := sms.New(sms.Config{})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(context.Background(), "acme", startBalance)
	require.NoError(t, err)
	svc := phonenumbers.New(st, provider, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, err = svc.Search(context.Background(), phonenumbers.SearchInput{Country: "US"})
	require.Equal(t, "sms_provider_not_configured", code(err))
	require.Contains(t, apierr.As(err).Message, "TWILIO_ACCOUNT_SID")
	buy := phonenumbers.BuyInput{PhoneNumber: "+14155550100", Country: "US", ConfirmPrice: price(115)}
	require.Equal(t, "sms_provider_not_configured", code(svc.CheckPurchase(context.Background(), ws.ID, buy)))
	_, err = svc.Buy(context.Background(), ws.ID, buy)
	require.Equal(t, "sms_provider_not_configured", code(err))
}

func TestSMSCredits(t *testing.T) {
	t.Parallel()
	credits, segments := phonenumbers.SMSCredits("+14155550100", "Hi!")
	require.Equal(t, [2]int{1, 1}, [2]int{credits, segments})
	credits, segments = phonenumbers.SMSCredits("+442071838750", "Hi!")
	require.Equal(t, [2]int{phonenumbers.SMSPriceOther, 1}, [2]int{credits, segments})
	long := make([]byte, 200)
	for i := range long {
		long[i] = 'a'
	}
	credits, segments = phonenumbers.SMSCredits("+14155550100", string(long))
	require.Equal(t, 2, segments, "200 GSM characters are two segments")
	require.Equal(t, 2, credits)
}

// TestTheBuyToolQuotesThePriceAndBuysAtIt: buy_phone_number is a spend tool; its summary
// (what the user confirms) quotes the table's price, and running it buys at that price.
func TestTheBuyToolQuotesThePriceAndBuysAtIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	tools := w.svc.AgentTools()
	require.Len(t, tools, 1)
	buy := tools[0]
	require.Equal(t, "buy_phone_number", buy.Name)
	require.Equal(t, agent.Spend, buy.Class)

	summary, err := buy.Describe(ctx, agent.Call{WorkspaceID: w.ws, Arguments: json.RawMessage(`{"phone_number":"+14155550101","country":"US"}`)})
	require.NoError(t, err)
	require.Equal(t, "Buy the US phone number +14155550101 for 115 credits ($1.15) a month, charged now.", summary)
	_, err = buy.Describe(ctx, agent.Call{WorkspaceID: w.ws, Arguments: json.RawMessage(`{"phone_number":"+14155550101","country":"US","confirm_price":1}`)})
	require.Equal(t, "invalid_arguments", code(err), "the model does not set the price")
	_, err = buy.Describe(ctx, agent.Call{WorkspaceID: w.ws, Arguments: json.RawMessage(`{"phone_number":"+4930123456","country":"DE"}`)})
	require.Equal(t, "regulatory_bundle_required", code(err))
	require.Empty(t, w.fake.Bought(), "describing buys nothing")

	got, err := buy.Run(ctx, agent.Call{WorkspaceID: w.ws, Arguments: json.RawMessage(`{"phone_number":"+14155550101","country":"US"}`)})
	require.NoError(t, err)
	require.Equal(t, "+14155550101", got.(phonenumbers.PhoneNumber).PhoneNumber)
	require.Equal(t, []string{"+14155550101"}, w.fake.Bought())
	require.Equal(t, int64(startBalance-1_150_000_000), w.balance(t))
}
