package bulk

import (
	"encoding/json"
	"time"

	"switchboard/store"
)

// Pending is a destructive bulk call parked for confirmation, as /api answers it (202): the
// action to confirm with POST /api/actions/{action_id}/confirm, and the set it matched.
type Pending struct {
	Success      bool             `json:"success"`
	Status       string           `json:"status"`
	ActionID     string           `json:"action_id"`
	Code         string           `json:"code"`
	Summary      string           `json:"summary"`
	ExpiresAt    time.Time        `json:"expires_at"`
	Instructions string           `json:"instructions"`
	Requested    int              `json:"requested"`
	Affected     int              `json:"affected"`
	Sample       []store.BulkItem `json:"sample"`
	Skipped      []Skip           `json:"skipped,omitempty"`
}

// PendingOf reads what a parked call told (agent.Pipeline.Park) as a Pending, with REST
// instructions.
func PendingOf(told map[string]any) (Pending, error) {
	var p Pending
	raw, err := json.Marshal(told)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, err
	}
	if p.Sample == nil {
		p.Sample = []store.BulkItem{}
	}
	p.Instructions = "Nothing has been done yet. Show the summary to the user; if they agree, POST /api/actions/" + p.ActionID +
		"/confirm with {\"code\": \"" + p.Code + "\"} before " + p.ExpiresAt.UTC().Format(time.RFC3339) + "."
	return p, nil
}

// ResultOf reads a confirmed action's result (any, from agent.Pipeline.ConfirmAction) as a
// Result.
func ResultOf(v any) (Result, error) {
	if r, ok := v.(Result); ok {
		return r, nil
	}
	var r Result
	raw, err := json.Marshal(v)
	if err != nil {
		return r, err
	}
	err = json.Unmarshal(raw, &r)
	if r.Sample == nil {
		r.Sample = []store.BulkItem{}
	}
	return r, err
}
