package quota_test

import (
	"testing"

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
