// Package quota answers "may this workspace spend now, and if not, why": suspended, out of
// credit, or at its monthly spend cap. Campaigns and channels ask it before they spend; as
// with turns, the message that uses the last of the money goes out and is charged, the next
// one does not.
package quota

import "switchboard/store"

// Reasons a workspace may not spend, as campaigns' paused_reason and channels' stored
// messages name them.
const (
	Suspended  = store.PausedWorkspaceSuspended
	NoCredit   = "insufficient_quota"
	CapReached = "spend_cap_reached"
)

// Refusal is why the workspace may not spend now, or "" when it may.
func Refusal(w store.Workspace) string {
	switch {
	case w.Status == store.WorkspaceSuspended:
		return Suspended
	case w.BalanceNanoUSD <= 0:
		return NoCredit
	case store.CapReached(w.MonthlyCapNanoUSD, w.MonthSpendNanoUSD):
		return CapReached
	}
	return ""
}
