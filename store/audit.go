package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// AuditActor is who made a change: a signed-in person, an API key, an operator at the
// command line, or the platform itself.
type AuditActor struct {
	Type  string    // "user", "key", "operator" or "system"
	ID    uuid.UUID // the user's or key's id; uuid.Nil for an operator or the system
	Label string    // the person's email or the key's display prefix
	Role  string    // the role the actor acted with
}

// ActorOf is the actor a principal stands for: the signed-in person of a dashboard session
// (or the development user), else the key.
func ActorOf(p Principal) AuditActor {
	if p.KeyID == uuid.Nil {
		return AuditActor{Type: "user", ID: p.UserID, Label: p.UserEmail, Role: p.Role}
	}
	return AuditActor{Type: "key", ID: p.KeyID, Role: p.Role}
}

// SystemActor is the platform acting on its own (a scheduled job, a queued run).
var SystemActor = AuditActor{Type: "system"}

// OperatorActor is an operator at the command line (`switchboard keys create`, ...).
var OperatorActor = AuditActor{Type: "operator", Role: "operator"}

type auditActorKey struct{}

// WithAuditActor returns ctx carrying the actor its audited changes are recorded under. The
// HTTP layer sets it where it authenticates a request, so every operation below (the /api
// route, the MCP tool, the assistant's tool) records its caller without passing it along
// each signature: the changes are made deep in domain packages that take a workspace, not a
// principal.
func WithAuditActor(ctx context.Context, a AuditActor) context.Context {
	return context.WithValue(ctx, auditActorKey{}, a)
}

// AuditActorFrom is the actor of ctx; SystemActor when none was set.
func AuditActorFrom(ctx context.Context) AuditActor {
	if a, ok := ctx.Value(auditActorKey{}).(AuditActor); ok {
		return a
	}
	return SystemActor
}

// AuditRecord is one audited change, as its writer describes it; the actor comes from the
// context (WithAuditActor).
type AuditRecord struct {
	WorkspaceID uuid.UUID
	Action      string // package audit names the actions
	TargetType  string // "agent", "key", "channel", ...
	TargetID    string
	Summary     any // marshaled to a JSON object: what changed (never a secret)
}

// AuditEntry is a stored entry of the audit log.
type AuditEntry struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	CreatedAt   time.Time
	Actor       AuditActor
	Action      string
	TargetType  string
	TargetID    string
	Summary     json.RawMessage
}

// RecordAudit appends an entry to the audit log. Call it on the Tx of the change it
// records, so the two commit together or not at all.
func (q *queries) RecordAudit(ctx context.Context, r AuditRecord) error {
	summary := []byte("{}")
	if r.Summary != nil {
		var err error
		if summary, err = json.Marshal(r.Summary); err != nil {
			return err
		}
	}
	a := AuditActorFrom(ctx)
	var actorID *uuid.UUID
	if a.ID != uuid.Nil {
		actorID = &a.ID
	}
	return q.sql.InsertAuditEntry(ctx, q.db, dbsqlc.InsertAuditEntryParams{WorkspaceID: r.WorkspaceID, ActorType: a.Type, ActorID: actorID,
		ActorLabel: a.Label, ActorRole: a.Role, Action: r.Action, TargetType: r.TargetType, TargetID: r.TargetID, Summary: summary})
}

// AuditFilter selects entries of the audit log; nil fields select any.
type AuditFilter struct {
	Action    *string
	ActorID   *uuid.UUID
	ActorType *string
	TargetID  *string
	Since     *time.Time // at or after
	Until     *time.Time // before
	After     *uuid.UUID // the last entry of the previous page
	Limit     int
}

// ListAuditEntries lists the workspace's entries, newest first. An After that is not an
// entry of the workspace is ErrNotFound ("audit entry").
func (q *queries) ListAuditEntries(ctx context.Context, ws uuid.UUID, f AuditFilter) ([]AuditEntry, error) {
	p := dbsqlc.ListAuditEntriesParams{WorkspaceID: ws, Action: f.Action, ActorID: f.ActorID, ActorType: f.ActorType,
		TargetID: f.TargetID, Since: f.Since, Until: f.Until, MaxRows: int32(f.Limit)}
	if f.After != nil {
		seq, err := q.sql.AuditEntrySeq(ctx, q.db, dbsqlc.AuditEntrySeqParams{WorkspaceID: ws, ID: *f.After})
		if err != nil {
			return nil, notFound("audit entry", err)
		}
		p.BeforeSeq = &seq
	}
	rows, err := q.sql.ListAuditEntries(ctx, q.db, p)
	return mapRows(rows, auditEntry), err
}

func auditEntry(r dbsqlc.AuditLog) AuditEntry {
	var id uuid.UUID
	if r.ActorID != nil {
		id = *r.ActorID
	}
	return AuditEntry{ID: r.ID, WorkspaceID: r.WorkspaceID, CreatedAt: r.CreatedAt, Action: r.Action, TargetType: r.TargetType,
		TargetID: r.TargetID, Summary: r.Summary, Actor: AuditActor{Type: r.ActorType, ID: id, Label: r.ActorLabel, Role: r.ActorRole}}
}
