package quota_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/quota"
	"switchboard/store"
)

func TestRefusal(t *testing.T) {
	capped := int64(1_000)
	for name, tc := range map[string]struct {
		w    store.Workspace
		want string
	}{
		"may spend":      {store.Workspace{Status: "active", BalanceNanoUSD: 1}, ""},
		"suspended":      {store.Workspace{Status: store.WorkspaceSuspended, BalanceNanoUSD: 100}, quota.Suspended},
		"no credit":      {store.Workspace{Status: "active", BalanceNanoUSD: 0}, quota.NoCredit},
		"in debt":        {store.Workspace{Status: "active", BalanceNanoUSD: -5}, quota.NoCredit},
		"cap reached":    {store.Workspace{Status: "active", BalanceNanoUSD: 100, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 1_000}, quota.CapReached},
		"under the cap":  {store.Workspace{Status: "active", BalanceNanoUSD: 100, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 999}, ""},
		"suspended wins": {store.Workspace{Status: store.WorkspaceSuspended, BalanceNanoUSD: 0}, quota.Suspended},
	} {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, quota.Refusal(tc.w)) })
	}
}

// TestCapStopsOnlySpending: at the cap a call that spends is refused and one that does not
// goes on; suspension and an empty balance refuse both.
func TestCapStopsOnlySpending(t *testing.T) {
	capped := int64(1_000)
	for name, tc := range map[string]struct {
		a                 quota.Account
		spending, reading string
	}{
		"at the cap": {quota.Account{Status: "active", BalanceNanoUSD: 100, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 1_000}, quota.CapReached, ""},
		"suspended":  {quota.Account{Status: store.WorkspaceSuspended, BalanceNanoUSD: 100}, quota.Suspended, quota.Suspended},
		"no credit":  {quota.Account{Status: "active", BalanceNanoUSD: 0}, quota.NoCredit, quota.NoCredit},
		"may":        {quota.Account{Status: "active", BalanceNanoUSD: 1, MonthlyCapNanoUSD: &capped}, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.spending, tc.a.Reason(true))
			require.Equal(t, tc.reading, tc.a.Reason(false))
		})
	}
}

func TestCheckWords(t *testing.T) {
	capped := int64(2_500_000_000)
	now := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		a       quota.Account
		want    quota.Refused
		spends  bool
		allowed bool
	}{
		"suspended": {a: quota.Account{Name: "acme", Status: store.WorkspaceSuspended, BalanceNanoUSD: 5}, want: quota.Refused{Reason: quota.Suspended,
			Message: `The workspace "acme" is suspended.`, Hint: "Ask an operator to resume it (`switchboard workspaces resume NAME`)."}},
		"no credit": {a: quota.Account{Name: "acme", Status: "active", BalanceNanoUSD: -1}, want: quota.Refused{Reason: quota.NoCredit,
			Message: `The workspace "acme" has no credit left.`, Hint: "Ask an operator to add credit (`switchboard workspaces credit NAME --usd AMOUNT`)."}},
		"cap, resetting next year": {a: quota.Account{Name: "acme", Status: "active", BalanceNanoUSD: 5, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 2_600_000_000},
			spends: true, want: quota.Refused{Reason: quota.CapReached,
				Message: `The workspace "acme" reached its monthly spend cap of $2.50 ($2.60 spent this month); the cap resets on 2027-01-01 00:00 UTC.`,
				Hint:    "An admin can raise or clear the cap on the dashboard's Settings page, or an operator with `switchboard workspaces cap NAME --usd AMOUNT` (or `--clear`)."}},
		"cap, reading": {a: quota.Account{Name: "acme", Status: "active", BalanceNanoUSD: 5, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 2_600_000_000},
			allowed: true},
	} {
		t.Run(name, func(t *testing.T) {
			got := quota.Check(tc.a, tc.spends, now)
			if tc.allowed {
				require.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			require.Equal(t, tc.want, *got)
		})
	}
}

// TestResetIsUTC: the cap resets on the first of the next month in UTC, whatever the zone
// of the clock that asks.
func TestResetIsUTC(t *testing.T) {
	capped := int64(1)
	a := quota.Account{Name: "acme", Status: "active", BalanceNanoUSD: 5, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 1}
	tokyo := time.FixedZone("JST", 9*3600)
	// 1 March 08:00 in Tokyo is still February in UTC.
	got := quota.Check(a, true, time.Date(2026, 3, 1, 8, 0, 0, 0, tokyo))
	require.NotNil(t, got)
	require.Contains(t, got.Message, "resets on 2026-03-01 00:00 UTC.")
}

func TestAccountsOfWorkspaceAndPrincipal(t *testing.T) {
	capped := int64(7)
	w := store.Workspace{Name: "acme", Status: "active", BalanceNanoUSD: 3, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 2}
	p := store.Principal{WorkspaceName: "acme", WorkspaceState: "active", BalanceNanoUSD: 3, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 2}
	want := quota.Account{Name: "acme", Status: "active", BalanceNanoUSD: 3, MonthlyCapNanoUSD: &capped, MonthSpendNanoUSD: 2}
	require.Equal(t, want, quota.OfWorkspace(w))
	require.Equal(t, want, quota.OfPrincipal(p))
}
