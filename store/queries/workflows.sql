-- name: InsertWorkflow :one
INSERT INTO workflows (workspace_id, short_id, name, description, enabled, document, trigger_kind, trigger_event,
                       event_cursor, next_fire_at)
VALUES (@workspace_id, @short_id, @name, @description, @enabled, @document, @trigger_kind, @trigger_event,
        (SELECT w.event_seq FROM workspaces w WHERE w.id = @workspace_id), @next_fire_at)
RETURNING *;

-- name: UpdateWorkflow :one
-- UpdateWorkflow replaces the document. An event trigger starts again from the workspace's
-- cursor when it is enabled again or changes event (it never runs on events it was not
-- watching for); otherwise it keeps its place.
UPDATE workflows SET name = @name, description = @description, enabled = @enabled, document = @document,
    trigger_kind = @trigger_kind, trigger_event = @trigger_event, next_fire_at = @next_fire_at,
    event_cursor = CASE WHEN (NOT enabled AND @enabled) OR trigger_event IS DISTINCT FROM @trigger_event
                        THEN (SELECT w.event_seq FROM workspaces w WHERE w.id = @workspace_id) ELSE event_cursor END,
    updated_at = now()
WHERE workspace_id = @workspace_id AND short_id = @short_id
RETURNING *;

-- name: WorkflowByShortID :one
SELECT * FROM workflows WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: WorkflowByID :one
SELECT * FROM workflows WHERE workspace_id = @workspace_id AND id = @id;

-- name: ListWorkflows :many
SELECT * FROM workflows WHERE workspace_id = @workspace_id ORDER BY created_at DESC, id DESC LIMIT 500;

-- name: DeleteWorkflow :execrows
DELETE FROM workflows WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: LockEventWorkflows :many
-- LockEventWorkflows takes the enabled event workflows that have events to look at, skipping
-- those another replica holds: each workflow's events are matched by one replica at a time.
SELECT f.* FROM workflows f JOIN workspaces w ON w.id = f.workspace_id
WHERE f.enabled AND f.trigger_kind = 'event' AND f.event_cursor < w.event_seq
ORDER BY f.workspace_id, f.id
LIMIT @max::int
FOR UPDATE OF f SKIP LOCKED;

-- name: EventsOfTypeAfter :many
SELECT seq, short_id, envelope FROM events
WHERE workspace_id = @workspace_id AND seq > @after AND seq <= @until AND type = @type
ORDER BY seq LIMIT @max::int;

-- name: SetWorkflowCursor :exec
UPDATE workflows SET event_cursor = @event_cursor WHERE id = @id;

-- name: WorkspaceEventSeq :one
SELECT event_seq FROM workspaces WHERE id = @id;

-- name: LockDueSchedules :many
SELECT * FROM workflows
WHERE enabled AND trigger_kind = 'schedule' AND next_fire_at <= @now
ORDER BY next_fire_at
LIMIT @max::int
FOR UPDATE SKIP LOCKED;

-- name: SetWorkflowNextFire :exec
UPDATE workflows SET next_fire_at = @next_fire_at WHERE id = @id;

-- name: InsertWorkflowRun :one
-- InsertWorkflowRun starts a run; a second run for the same trigger key does nothing (and
-- returns no row).
INSERT INTO workflow_runs (workspace_id, short_id, workflow_id, status, document, trigger, trigger_key,
                           conversation_id, contact_id, deadline, created_at)
VALUES (@workspace_id, @short_id, @workflow_id, 'queued', @document, @trigger, @trigger_key,
        (SELECT c.id FROM conversations c WHERE c.workspace_id = @workspace_id AND c.id = sqlc.narg('conversation_id')::uuid),
        (SELECT k.id FROM contacts k WHERE k.workspace_id = @workspace_id AND k.id = sqlc.narg('contact_id')::uuid),
        @deadline, @created_at)
ON CONFLICT (workflow_id, trigger_key) DO NOTHING
RETURNING *;

-- name: WorkflowRunByShortID :one
SELECT r.*, f.short_id AS workflow_short_id FROM workflow_runs r JOIN workflows f ON f.id = r.workflow_id
WHERE r.workspace_id = @workspace_id AND r.short_id = @short_id;

-- name: WorkflowRunByID :one
SELECT r.*, f.short_id AS workflow_short_id FROM workflow_runs r JOIN workflows f ON f.id = r.workflow_id
WHERE r.workspace_id = @workspace_id AND r.id = @id;

-- name: LockWorkflowRun :one
SELECT r.*, f.short_id AS workflow_short_id FROM workflow_runs r JOIN workflows f ON f.id = r.workflow_id
WHERE r.workspace_id = @workspace_id AND r.id = @id
FOR UPDATE OF r;

-- name: ListWorkflowRuns :many
SELECT r.*, f.short_id AS workflow_short_id FROM workflow_runs r JOIN workflows f ON f.id = r.workflow_id
WHERE r.workspace_id = @workspace_id AND r.workflow_id = @workflow_id
ORDER BY r.created_at DESC, r.id DESC LIMIT @max::int;

-- name: SetWorkflowRunProgress :exec
UPDATE workflow_runs SET status = @status, next_step = @next_step, resume_at = sqlc.narg('resume_at'),
    started_at = coalesce(started_at, @now)
WHERE id = @id;

-- name: FinishWorkflowRun :exec
UPDATE workflow_runs SET status = @status, error = sqlc.narg('error'), finished_at = @now, resume_at = NULL
WHERE id = @id;

-- name: WorkflowRunSteps :many
SELECT * FROM workflow_run_steps WHERE workspace_id = @workspace_id AND run_id = @run_id ORDER BY started_at, idx;

-- name: UpsertWorkflowRunStep :exec
INSERT INTO workflow_run_steps (workspace_id, run_id, idx, step_id, type, status, attempts, output, error, started_at, finished_at)
VALUES (@workspace_id, @run_id, @idx, @step_id, @type, @status, @attempts, @output, sqlc.narg('error'), @started_at, sqlc.narg('finished_at'))
ON CONFLICT (run_id, idx) DO UPDATE SET status = excluded.status, attempts = excluded.attempts, output = excluded.output,
    error = excluded.error, finished_at = excluded.finished_at;

-- name: UpdateContactFields :execrows
UPDATE contacts SET name = coalesce(sqlc.narg('name'), name), email = coalesce(sqlc.narg('email'), email),
    phone = coalesce(sqlc.narg('phone'), phone), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: WorkflowConversation :one
SELECT id, short_id, status, channel, labels, contact_id FROM conversations
WHERE workspace_id = @workspace_id AND id = @id;
