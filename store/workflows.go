package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// Workflow is a stored workflow: its document and what was read from it to find its runs.
type Workflow = dbsqlc.Workflow

// WorkflowRun is a run of a workflow, with its workflow's short id.
type WorkflowRun = dbsqlc.WorkflowRunByShortIDRow

// WorkflowRunStep is what a run recorded of one of its steps.
type WorkflowRunStep = dbsqlc.WorkflowRunStep

// WorkflowWrite is what creating or replacing a workflow stores.
type WorkflowWrite struct {
	Name         string
	Description  *string
	Enabled      bool
	Document     string
	TriggerKind  string
	TriggerEvent *string
	NextFireAt   *time.Time
}

// NewWorkflowRun is a run about to start.
type NewWorkflowRun struct {
	WorkflowID     uuid.UUID
	ShortID        string
	Document       string
	Trigger        []byte // JSON
	TriggerKey     *string
	ConversationID *uuid.UUID // kept only when it is a conversation of the workspace
	ContactID      *uuid.UUID // kept only when it is a contact of the workspace
	Deadline       time.Time
	CreatedAt      time.Time
}

// EventRef is an event a trigger looks at.
type EventRef = dbsqlc.EventsOfTypeAfterRow

// InsertWorkflow creates a workflow; a name the workspace already uses is ErrExists.
func (q *queries) InsertWorkflow(ctx context.Context, ws uuid.UUID, shortID string, w WorkflowWrite) (Workflow, error) {
	out, err := q.sql.InsertWorkflow(ctx, q.db, dbsqlc.InsertWorkflowParams{WorkspaceID: ws, ShortID: shortID, Name: w.Name,
		Description: w.Description, Enabled: w.Enabled, Document: w.Document, TriggerKind: w.TriggerKind,
		TriggerEvent: w.TriggerEvent, NextFireAt: w.NextFireAt})
	return out, uniqueViolation(err)
}

// UpdateWorkflow replaces a workflow's document.
func (q *queries) UpdateWorkflow(ctx context.Context, ws uuid.UUID, shortID string, w WorkflowWrite) (Workflow, error) {
	out, err := q.sql.UpdateWorkflow(ctx, q.db, dbsqlc.UpdateWorkflowParams{WorkspaceID: ws, ShortID: shortID, Name: w.Name,
		Description: w.Description, Enabled: w.Enabled, Document: w.Document, TriggerKind: w.TriggerKind,
		TriggerEvent: w.TriggerEvent, NextFireAt: w.NextFireAt})
	return out, uniqueViolation(notFound("workflow", err))
}

// WorkflowByShortID is a workflow of the workspace.
func (q *queries) WorkflowByShortID(ctx context.Context, ws uuid.UUID, shortID string) (Workflow, error) {
	out, err := q.sql.WorkflowByShortID(ctx, q.db, dbsqlc.WorkflowByShortIDParams{WorkspaceID: ws, ShortID: shortID})
	return out, notFound("workflow", err)
}

// WorkflowByID is a workflow of the workspace.
func (q *queries) WorkflowByID(ctx context.Context, ws, id uuid.UUID) (Workflow, error) {
	out, err := q.sql.WorkflowByID(ctx, q.db, dbsqlc.WorkflowByIDParams{WorkspaceID: ws, ID: id})
	return out, notFound("workflow", err)
}

// ListWorkflows lists the workspace's workflows, newest first (at most 500).
func (q *queries) ListWorkflows(ctx context.Context, ws uuid.UUID) ([]Workflow, error) {
	return q.sql.ListWorkflows(ctx, q.db, ws)
}

// DeleteWorkflow deletes a workflow and its runs.
func (q *queries) DeleteWorkflow(ctx context.Context, ws uuid.UUID, shortID string) error {
	n, err := q.sql.DeleteWorkflow(ctx, q.db, dbsqlc.DeleteWorkflowParams{WorkspaceID: ws, ShortID: shortID})
	return affected("workflow", n, err)
}

// LockEventWorkflows takes up to max enabled event workflows with events after their
// cursor, skipping those another transaction holds, until the transaction ends.
func (t *Tx) LockEventWorkflows(ctx context.Context, maxRows int) ([]Workflow, error) {
	return t.sql.LockEventWorkflows(ctx, t.db, maxRows)
}

// WorkspaceEventSeq is the workspace's last event cursor.
func (q *queries) WorkspaceEventSeq(ctx context.Context, ws uuid.UUID) (int64, error) {
	seq, err := q.sql.WorkspaceEventSeq(ctx, q.db, ws)
	return seq, notFound("workspace", err)
}

// EventsOfTypeAfter are the workspace's events of one type with cursors in (after, until].
func (q *queries) EventsOfTypeAfter(ctx context.Context, ws uuid.UUID, typ string, after, until int64, maxRows int) ([]EventRef, error) {
	return q.sql.EventsOfTypeAfter(ctx, q.db, dbsqlc.EventsOfTypeAfterParams{WorkspaceID: ws, Type: typ, After: after, Until: until, Max: maxRows})
}

// SetWorkflowCursor records the last event cursor a workflow's trigger looked at.
func (q *queries) SetWorkflowCursor(ctx context.Context, id uuid.UUID, seq int64) error {
	return q.sql.SetWorkflowCursor(ctx, q.db, dbsqlc.SetWorkflowCursorParams{ID: id, EventCursor: seq})
}

// LockDueSchedules takes up to max enabled schedule workflows due at now, skipping those
// another transaction holds.
func (t *Tx) LockDueSchedules(ctx context.Context, now time.Time, maxRows int) ([]Workflow, error) {
	return t.sql.LockDueSchedules(ctx, t.db, dbsqlc.LockDueSchedulesParams{Now: &now, Max: maxRows})
}

// SetWorkflowNextFire records when a schedule fires next.
func (q *queries) SetWorkflowNextFire(ctx context.Context, id uuid.UUID, next *time.Time) error {
	return q.sql.SetWorkflowNextFire(ctx, q.db, dbsqlc.SetWorkflowNextFireParams{ID: id, NextFireAt: next})
}

// InsertWorkflowRun starts a run. A run with the same trigger key already exists: ok false.
func (q *queries) InsertWorkflowRun(ctx context.Context, ws uuid.UUID, r NewWorkflowRun) (run dbsqlc.WorkflowRun, ok bool, err error) {
	run, err = q.sql.InsertWorkflowRun(ctx, q.db, dbsqlc.InsertWorkflowRunParams{WorkspaceID: ws, ShortID: r.ShortID,
		WorkflowID: r.WorkflowID, Document: r.Document, Trigger: r.Trigger, TriggerKey: r.TriggerKey,
		ConversationID: r.ConversationID, ContactID: r.ContactID, Deadline: r.Deadline, CreatedAt: r.CreatedAt})
	if errors.Is(err, pgx.ErrNoRows) {
		return run, false, nil
	}
	return run, err == nil, err
}

// WorkflowRunByShortID is a run of the workspace.
func (q *queries) WorkflowRunByShortID(ctx context.Context, ws uuid.UUID, shortID string) (WorkflowRun, error) {
	out, err := q.sql.WorkflowRunByShortID(ctx, q.db, dbsqlc.WorkflowRunByShortIDParams{WorkspaceID: ws, ShortID: shortID})
	return out, notFound("run", err)
}

// WorkflowRunByID is a run of the workspace.
func (q *queries) WorkflowRunByID(ctx context.Context, ws, id uuid.UUID) (WorkflowRun, error) {
	out, err := q.sql.WorkflowRunByID(ctx, q.db, dbsqlc.WorkflowRunByIDParams{WorkspaceID: ws, ID: id})
	return WorkflowRun(out), notFound("run", err)
}

// LockWorkflowRun reads a run and locks it until the transaction ends: its status changes
// (a step recorded, a cancel, the end) one transaction at a time.
func (t *Tx) LockWorkflowRun(ctx context.Context, ws, id uuid.UUID) (WorkflowRun, error) {
	out, err := t.sql.LockWorkflowRun(ctx, t.db, dbsqlc.LockWorkflowRunParams{WorkspaceID: ws, ID: id})
	return WorkflowRun(out), notFound("run", err)
}

// ListWorkflowRuns lists a workflow's runs, newest first.
func (q *queries) ListWorkflowRuns(ctx context.Context, ws, workflowID uuid.UUID, maxRows int) ([]WorkflowRun, error) {
	rows, err := q.sql.ListWorkflowRuns(ctx, q.db, dbsqlc.ListWorkflowRunsParams{WorkspaceID: ws, WorkflowID: workflowID, Max: maxRows})
	out := make([]WorkflowRun, len(rows))
	for i, r := range rows {
		out[i] = WorkflowRun(r)
	}
	return out, err
}

// SetWorkflowRunProgress records where a run stands: its status, the next step to run and
// when it may go on.
func (q *queries) SetWorkflowRunProgress(ctx context.Context, id uuid.UUID, status string, next int, resumeAt *time.Time, now time.Time) error {
	return q.sql.SetWorkflowRunProgress(ctx, q.db, dbsqlc.SetWorkflowRunProgressParams{ID: id, Status: status, NextStep: next,
		ResumeAt: resumeAt, Now: &now})
}

// FinishWorkflowRun records a run's end.
func (q *queries) FinishWorkflowRun(ctx context.Context, id uuid.UUID, status string, reason *string, now time.Time) error {
	return q.sql.FinishWorkflowRun(ctx, q.db, dbsqlc.FinishWorkflowRunParams{ID: id, Status: status, Error: reason, Now: &now})
}

// WorkflowRunSteps are the steps a run recorded, in the order they started.
func (q *queries) WorkflowRunSteps(ctx context.Context, ws, runID uuid.UUID) ([]WorkflowRunStep, error) {
	return q.sql.WorkflowRunSteps(ctx, q.db, dbsqlc.WorkflowRunStepsParams{WorkspaceID: ws, RunID: runID})
}

// SaveWorkflowRunStep records (or updates) one step of a run.
func (q *queries) SaveWorkflowRunStep(ctx context.Context, s WorkflowRunStep) error {
	return q.sql.UpsertWorkflowRunStep(ctx, q.db, dbsqlc.UpsertWorkflowRunStepParams(s))
}

// ContactFields are the fields of a contact a workflow may set; nil leaves one as it is.
type ContactFields struct {
	Name, Email, Phone *string
}

// UpdateContactFields sets fields of a contact of the workspace.
func (q *queries) UpdateContactFields(ctx context.Context, ws, id uuid.UUID, f ContactFields) error {
	n, err := q.sql.UpdateContactFields(ctx, q.db, dbsqlc.UpdateContactFieldsParams{WorkspaceID: ws, ID: id, Name: f.Name, Email: f.Email, Phone: f.Phone})
	return affected("contact", n, err)
}

// uniqueViolation turns a unique violation (a workflow name the workspace already uses)
// into ErrExists.
func uniqueViolation(err error) error {
	if isUniqueViolation(err) {
		return ErrExists
	}
	return err
}

// WorkflowConversation is what a run's expressions see of its conversation.
type WorkflowConversation = dbsqlc.WorkflowConversationRow

// WorkflowConversation reads a conversation of the workspace for a run.
func (q *queries) WorkflowConversation(ctx context.Context, ws, id uuid.UUID) (WorkflowConversation, error) {
	out, err := q.sql.WorkflowConversation(ctx, q.db, dbsqlc.WorkflowConversationParams{WorkspaceID: ws, ID: id})
	return out, notFound("conversation", err)
}
