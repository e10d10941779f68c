// Package quota answers "may this workspace spend now, and if not, why": suspended, out of
// credit, or at its monthly spend cap. Every surface asks it: the API's middleware before
// each call (Check), campaigns and channels before they send (Refusal). As with turns, the
// message that uses the last of the money goes out and is charged, the next one does not.
package quota

import (
	"fmt"
	"time"

	"switchboard/money"
	"switchboard/store"
)

// Reasons a workspace may not spend, as campaigns' paused_reason and channels' stored
// messages name them.
const (
	Suspended  = store.PausedWorkspaceSuspended
	NoCredit   = "insufficient_quota"
	CapReached = "spend_cap_reached"
)

// Account is what the rule reads of a workspace, whether it comes as a store.Workspace or
// with a key (store.Principal).
type Account struct {
	Name              string
	Status            string // store.WorkspaceSuspended or active
	BalanceNanoUSD    int64
	MonthlyCapNanoUSD *int64 // nil: no cap
	MonthSpendNanoUSD int64  // the spend of the current calendar month (UTC)
}

// OfWorkspace is the account of a workspace.
func OfWorkspace(w store.Workspace) Account {
	return Account{Name: w.Name, Status: w.Status, BalanceNanoUSD: w.BalanceNanoUSD,
		MonthlyCapNanoUSD: w.MonthlyCapNanoUSD, MonthSpendNanoUSD: w.MonthSpendNanoUSD}
}

// OfPrincipal is the account of the workspace of a key or a dashboard session, as read with it.
func OfPrincipal(p store.Principal) Account {
	return Account{Name: p.WorkspaceName, Status: p.WorkspaceState, BalanceNanoUSD: p.BalanceNanoUSD,
		MonthlyCapNanoUSD: p.MonthlyCapNanoUSD, MonthSpendNanoUSD: p.MonthSpendNanoUSD}
}

// Reason is why the account may not make a call now, or "" when it may. The monthly cap
// refuses only calls that spend (spends): reading, configuring and the event feed go on at
// the cap, so that the workspace's people can see why and act. A suspended workspace, or
// one without credit, may make no call at all.
func (a Account) Reason(spends bool) string {
	switch {
	case a.Status == store.WorkspaceSuspended:
		return Suspended
	case a.BalanceNanoUSD <= 0:
		return NoCredit
	case spends && store.CapReached(a.MonthlyCapNanoUSD, a.MonthSpendNanoUSD):
		return CapReached
	}
	return ""
}

// Refusal is why the workspace may not spend now, or "" when it may.
func Refusal(w store.Workspace) string { return OfWorkspace(w).Reason(true) }

// Refused is a refusal in words for the workspace's people: what stops it, and what they
// can do.
type Refused struct {
	Reason  string // Suspended, NoCredit or CapReached
	Message string
	Hint    string
}

// Check is nil when the account may make the call now, else the refusal; spends says the
// call spends money (it runs turns). At the cap, the message says when the cap resets: the
// first of the month after now's, 00:00 UTC.
func Check(a Account, spends bool, now time.Time) *Refused {
	switch a.Reason(spends) {
	case Suspended:
		return &Refused{Reason: Suspended, Message: fmt.Sprintf("The workspace %q is suspended.", a.Name),
			Hint: "Ask an operator to resume it (`switchboard workspaces resume NAME`)."}
	case NoCredit:
		return &Refused{Reason: NoCredit, Message: fmt.Sprintf("The workspace %q has no credit left.", a.Name),
			Hint: "Ask an operator to add credit (`switchboard workspaces credit NAME --usd AMOUNT`)."}
	case CapReached:
		return &Refused{Reason: CapReached,
			Message: fmt.Sprintf("The workspace %q reached its monthly spend cap of $%s ($%s spent this month); the cap resets on %s.",
				a.Name, money.FormatUSD(*a.MonthlyCapNanoUSD), money.FormatUSD(a.MonthSpendNanoUSD),
				store.NextMonth(now).Format("2006-01-02 15:04 UTC")),
			Hint: "An admin can raise or clear the cap on the dashboard's Settings page, or an operator with `switchboard workspaces cap NAME --usd AMOUNT` (or `--clear`)."}
	}
	return nil
}
