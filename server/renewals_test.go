package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type phoneView struct {
	ID              string     `json:"id"`
	PhoneNumber     string     `json:"phone_number"`
	Status          string     `json:"status"`
	PaidThrough     time.Time  `json:"paid_through"`
	RenewalFailedAt *time.Time `json:"renewal_failed_at"`
	ReleaseReason   *string    `json:"release_reason"`
}

func (b *testBundle) phone(t *testing.T, id string) phoneView {
	t.Helper()
	list := decode[struct{ Data []phoneView }](t, b.send(t, http.MethodGet, "/api/phone-numbers", "", 200))
	for _, p := range list.Data {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("no phone number %s", id)
	return phoneView{}
}

// setPaidThrough moves a number's paid period to end at the given time (a month passing).
func (b *testBundle) setPaidThrough(t *testing.T, id string, at time.Time) {
	t.Helper()
	_, err := b.store.Pool().Exec(context.Background(), `UPDATE phone_numbers SET paid_through = $1 WHERE id = $2`, at, id)
	require.NoError(t, err)
}

// runRenewals queues n renewal jobs at once, as racing replicas (or a restart with one
// queued) would, bypassing River's uniqueness, and waits until each has completed.
func (b *testBundle) runRenewals(t *testing.T, n int) {
	t.Helper()
	var ids []int64
	for range n {
		var id int64
		require.NoError(t, b.store.Pool().QueryRow(context.Background(),
			`INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at) VALUES ('{}', 'phone_number_renewals', 25, 'default', 'available', now()) RETURNING id`).Scan(&id))
		ids = append(ids, id)
	}
	require.Eventually(t, func() bool {
		var done int
		require.NoError(t, b.store.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM river_job WHERE id = ANY($1) AND state = 'completed'`, ids).Scan(&done))
		return done == n
	}, 30*time.Second, 20*time.Millisecond)
}

func renewalSpend(events []storedEvent) []storedEvent {
	var out []storedEvent
	for _, e := range events {
		if e.Data["category"] == "phone_number" && e.Data["renewal"] == true {
			out = append(out, e)
		}
	}
	return out
}

// TestPhoneNumbersRenewMonthlyOnceAndLapseWhenUnpaid: a number whose month ended is charged
// the next month once, however many renewal jobs race; a month the workspace cannot pay
// leaves the number working for the grace period, then releases it (release_reason unpaid).
func TestPhoneNumbersRenewMonthlyOnceAndLapseWhenUnpaid(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	ctx := context.Background()
	due := b.buyNumber(t)["id"].(string)
	other := b.buy(t, `{"phone_number":"+16045550103","country":"CA","confirm_price":130}`)["id"].(string)
	bought := b.phone(t, due)
	require.WithinDuration(t, time.Now().AddDate(0, 1, 0), bought.PaidThrough, 4*24*time.Hour, "the first month is paid at purchase (a month: 28 to 31 days)")
	require.Nil(t, bought.RenewalFailedAt)
	require.Nil(t, bought.ReleaseReason)
	otherPaid := b.phone(t, other).PaidThrough

	ended := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	b.setPaidThrough(t, due, ended)
	before := b.balance(t)
	b.runRenewals(t, 3)
	renewed := renewalSpend(b.events(t, "spend.recorded"))
	require.Len(t, renewed, 1, "one month, one charge, whatever the racing jobs")
	require.Equal(t, due, renewed[0].Data["phone_number_id"])
	require.Equal(t, 1.15, renewed[0].Data["amount_usd"])
	require.Equal(t, ended.Format(time.RFC3339), renewed[0].Data["period_start"])
	require.Equal(t, before-1_150_000_000, b.balance(t))
	p := b.phone(t, due)
	require.Equal(t, "active", p.Status)
	require.Equal(t, p.PaidThrough.UTC().Format(time.RFC3339), renewed[0].Data["period_end"], "paid through the period's end")
	require.True(t, !p.PaidThrough.Before(ended.AddDate(0, 0, 28)) && !p.PaidThrough.After(ended.AddDate(0, 0, 31)), "a month later: %s", p.PaidThrough)
	require.True(t, b.phone(t, other).PaidThrough.Equal(otherPaid), "a number not due is not charged")
	b.runRenewals(t, 1)
	require.Len(t, renewalSpend(b.events(t, "spend.recorded")), 1, "a later run charges nothing more")

	// A month the workspace cannot pay (it would pass the monthly cap): not charged, the
	// number keeps working during the grace period.
	capped := int64(3_500_000_000) // $3.50: $3.60 spent this month
	_, err := b.store.SetMonthlyCapByID(ctx, b.workspace.ID, &capped)
	require.NoError(t, err)
	b.setPaidThrough(t, due, time.Now().Add(-time.Hour))
	b.runRenewals(t, 1)
	p = b.phone(t, due)
	require.Equal(t, "active", p.Status, "within the grace period")
	require.NotNil(t, p.RenewalFailedAt)
	require.Len(t, renewalSpend(b.events(t, "spend.recorded")), 1)

	// Still unpaid past the grace period: released at the provider.
	b.setPaidThrough(t, due, time.Now().Add(-73*time.Hour))
	b.runRenewals(t, 2)
	p = b.phone(t, due)
	require.Equal(t, "released", p.Status)
	require.Equal(t, "unpaid", str(p.ReleaseReason))
	require.Len(t, w.sms.Released(), 1)
	require.Len(t, renewalSpend(b.events(t, "spend.recorded")), 1)

	// A release through the API says so.
	released := decode[phoneView](t, b.send(t, http.MethodDelete, "/api/phone-numbers/"+other, "", 200))
	require.Equal(t, "user", str(released.ReleaseReason))
}

// TestPhoneNumberRenewalsCatchUpMonthByMonth: a number more than a month behind (a server that was
// down) is charged each missed month, each its own charge and event.
func TestPhoneNumberRenewalsCatchUpMonthByMonth(t *testing.T) {
	t.Parallel()
	w := newCampaignWorld(t)
	b := w.b
	id := b.buyNumber(t)["id"].(string)
	start := time.Now().Add(-45 * 24 * time.Hour).UTC().Truncate(time.Second) // two months due (whatever the months' lengths), the third ahead
	b.setPaidThrough(t, id, start)
	before := b.balance(t)
	b.runRenewals(t, 2)
	renewed := renewalSpend(b.events(t, "spend.recorded"))
	require.Len(t, renewed, 2)
	require.Equal(t, start.Format(time.RFC3339), renewed[0].Data["period_start"])
	require.Equal(t, renewed[0].Data["period_end"], renewed[1].Data["period_start"])
	require.Equal(t, before-2*1_150_000_000, b.balance(t))
	p := b.phone(t, id)
	require.True(t, p.PaidThrough.After(time.Now()), "paid through the current month: %s", p.PaidThrough)
	require.Nil(t, p.RenewalFailedAt)
}
