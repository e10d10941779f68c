// Package audit is the workspace's record of who did what: the actions it names, the one
// call that records an action (Record, on the transaction of the change, so an entry exists
// exactly when its change does), and the read side behind GET /api/audit-log and the
// dashboard's Audit log page.
//
// Who acted comes from the request's context (store.WithAuditActor, set where the HTTP layer
// authenticates), so the domain code that makes a change records it with one call and no
// principal passed down to it. A change made without a request (a scheduled job) is recorded
// as the system's. Entries are never changed or deleted: the table refuses it
// (migration 0028), and no route offers it.
package audit

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// The audited actions. Their names are part of the /api contract (the `action` filter).
const (
	KeyCreated           = "key.created"
	KeyRevoked           = "key.revoked"
	MemberInvited        = "member.invited"
	RoleChanged          = "member.role_changed"
	AgentCreated         = "agent.created"
	AgentUpdated         = "agent.updated"
	AgentDeployed        = "agent.deployed"
	AgentUndeployed      = "agent.undeployed"
	AgentDeleted         = "agent.deleted"
	ChannelConnected     = "channel.connected"
	ComplianceAccepted   = "compliance.accepted"
	CapChanged           = "cap.changed"
	BulkToolRun          = "bulk.run"
	ContactErased        = "contact.erased"
	ConfirmationApproved = "confirmation.approved"
	RetentionChanged     = "retention.changed"
)

// Actions lists every action, in the order the contract documents them.
var Actions = []string{KeyCreated, KeyRevoked, MemberInvited, RoleChanged, AgentCreated, AgentUpdated, AgentDeployed,
	AgentUndeployed, AgentDeleted, ChannelConnected, ComplianceAccepted, CapChanged, BulkToolRun, ContactErased,
	ConfirmationApproved, RetentionChanged}

// Recorder is what Record writes on: a *store.Tx (the change's transaction).
type Recorder interface {
	RecordAudit(ctx context.Context, r store.AuditRecord) error
}

// Record appends the entry of action on target (its type and id) to ws's log, with summary
// (a map or struct marshaled to a JSON object: what changed, never a secret).
func Record(ctx context.Context, tx Recorder, ws uuid.UUID, action, targetType, targetID string, summary any) error {
	return tx.RecordAudit(ctx, store.AuditRecord{WorkspaceID: ws, Action: action, TargetType: targetType, TargetID: targetID, Summary: summary})
}

// Filter selects entries; zero fields select any.
type Filter struct {
	Action string
	// Actor is a user or key id, or one of the actor types user, key, operator, system.
	Actor  string
	Target string // a target's id
	Since  *time.Time
	Until  *time.Time
	After  string // next_after of the previous page
	Limit  int    // default DefaultPage, at most MaxPage
}

// Page sizes of the log.
const (
	DefaultPage = 50
	MaxPage     = 200
)

// Actor is who made a change, as the log shows it.
type Actor struct {
	Type  string  `json:"type"`
	ID    *string `json:"id"`
	Label string  `json:"label"`
	Role  string  `json:"role"`
}

// Entry is one entry of the log.
type Entry struct {
	ID         string          `json:"id"`
	Object     string          `json:"object"`
	CreatedAt  time.Time       `json:"created_at"`
	Actor      Actor           `json:"actor"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	Summary    json.RawMessage `json:"summary"`
}

// Page is a page of the log, newest first.
type Page struct {
	Object  string  `json:"object"`
	Data    []Entry `json:"data"`
	HasMore bool    `json:"has_more"`
	// NextAfter is passed as `after` to read the next page.
	NextAfter *string `json:"next_after"`
}

// Log reads a store's audit log.
type Log struct {
	store *store.Store
}

// New returns the log of st.
func New(st *store.Store) *Log { return &Log{store: st} }

// List returns a page of ws's entries that f selects.
func (l *Log) List(ctx context.Context, ws uuid.UUID, f Filter) (Page, error) {
	sf, err := storeFilter(f)
	if err != nil {
		return Page{}, err
	}
	rows, err := l.store.ListAuditEntries(ctx, ws, sf)
	if err != nil {
		return Page{}, apierr.WithParam(err, "after")
	}
	limit := sf.Limit - 1
	page := Page{Object: "list", Data: make([]Entry, 0, len(rows))}
	if len(rows) > limit {
		rows, page.HasMore = rows[:limit], true
		next := rows[limit-1].ID.String()
		page.NextAfter = &next
	}
	for _, r := range rows {
		page.Data = append(page.Data, entry(r))
	}
	return page, nil
}

var actorTypes = map[string]bool{"user": true, "key": true, "operator": true, "system": true}

func storeFilter(f Filter) (store.AuditFilter, error) {
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPage
	}
	if limit < 1 || limit > MaxPage {
		return store.AuditFilter{}, apierr.Invalid("limit", "invalid_value", "limit must be between 1 and %d.", MaxPage)
	}
	sf := store.AuditFilter{Limit: limit + 1, Since: f.Since, Until: f.Until}
	if f.Action != "" {
		if !known(f.Action) {
			return sf, apierr.Invalid("action", "invalid_value", "action must be one of the audited actions (see the Audit log section of the README), not %q.", f.Action)
		}
		sf.Action = &f.Action
	}
	switch {
	case f.Actor == "":
	case actorTypes[f.Actor]:
		sf.ActorType = &f.Actor
	default:
		id, err := uuid.Parse(f.Actor)
		if err != nil {
			return sf, apierr.Invalid("actor", "invalid_value", "actor must be a user or key id, or one of user, key, operator, system.")
		}
		sf.ActorID = &id
	}
	if f.Target != "" {
		sf.TargetID = &f.Target
	}
	if f.After != "" {
		id, err := uuid.Parse(f.After)
		if err != nil {
			return sf, apierr.Invalid("after", "invalid_value", "after must be the id of an entry (next_after of the previous page).")
		}
		sf.After = &id
	}
	if f.Since != nil && f.Until != nil && !f.Until.After(*f.Since) {
		return sf, apierr.Invalid("until", "invalid_value", "until must be after since.")
	}
	return sf, nil
}

func known(action string) bool {
	for _, a := range Actions {
		if a == action {
			return true
		}
	}
	return false
}

func entry(r store.AuditEntry) Entry {
	a := Actor{Type: r.Actor.Type, Label: r.Actor.Label, Role: r.Actor.Role}
	if r.Actor.ID != uuid.Nil {
		id := r.Actor.ID.String()
		a.ID = &id
	}
	return Entry{ID: r.ID.String(), Object: "audit_entry", CreatedAt: r.CreatedAt, Actor: a, Action: r.Action,
		TargetType: r.TargetType, TargetID: r.TargetID, Summary: r.Summary}
}
