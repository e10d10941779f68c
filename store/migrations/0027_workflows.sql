-- +goose Up
-- Workflows (package workflows): a YAML document (a trigger and steps) and its durable runs.

CREATE TABLE workflows (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id  uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id      text NOT NULL UNIQUE CHECK (short_id LIKE 'wf_%'),
    name          text NOT NULL,
    description   text,
    enabled       boolean NOT NULL,
    -- The document as written (YAML); the columns below are read from it when it is saved.
    document      text NOT NULL,
    trigger_kind  text NOT NULL CHECK (trigger_kind IN ('event', 'schedule', 'manual')),
    trigger_event text,
    -- Event triggers: the workspace's last event cursor the trigger has looked at. It starts
    -- at the workspace's cursor when the workflow is saved, so a new workflow never runs on
    -- past events.
    event_cursor  bigint NOT NULL DEFAULT 0,
    -- Schedule triggers: when the schedule fires next.
    next_fire_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (workspace_id, name)
);
CREATE INDEX workflows_workspace_idx ON workflows (workspace_id, created_at DESC);
CREATE INDEX workflows_event_idx ON workflows (workspace_id) WHERE enabled AND trigger_kind = 'event';
CREATE INDEX workflows_schedule_idx ON workflows (next_fire_at) WHERE enabled AND trigger_kind = 'schedule';

CREATE TABLE workflow_runs (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id    uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id        text NOT NULL UNIQUE CHECK (short_id LIKE 'run_%'),
    workflow_id     uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    status          text NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'succeeded', 'failed', 'cancelled')),
    -- The document as it was when the run started: editing a workflow never changes a run.
    document        text NOT NULL,
    -- What started it: {"kind": "event"|"schedule"|"manual", "event": envelope, "input": {...}}.
    trigger         jsonb NOT NULL,
    -- One run per event or schedule time per workflow, whichever replica saw it.
    trigger_key     text,
    conversation_id uuid REFERENCES conversations (id) ON DELETE SET NULL,
    contact_id      uuid REFERENCES contacts (id) ON DELETE SET NULL,
    -- The index of the step to run next; the steps before it have their result recorded.
    next_step       int NOT NULL DEFAULT 0,
    -- When the run may go on: the end of a wait, or of a failed attempt's backoff.
    resume_at       timestamptz,
    deadline        timestamptz NOT NULL,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    started_at      timestamptz,
    finished_at     timestamptz,
    UNIQUE (workflow_id, trigger_key)
);
CREATE INDEX workflow_runs_workflow_idx ON workflow_runs (workspace_id, workflow_id, created_at DESC);

-- One row per step the run reached: its status, output, error, attempts and timing.
CREATE TABLE workflow_run_steps (
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    run_id       uuid NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    idx          int NOT NULL,
    step_id      text NOT NULL,
    type         text NOT NULL,
    status       text NOT NULL CHECK (status IN ('running', 'waiting', 'retrying', 'succeeded', 'skipped', 'failed')),
    attempts     int NOT NULL DEFAULT 0,
    output       jsonb,
    error        text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    PRIMARY KEY (run_id, idx)
);

-- +goose Down
DROP TABLE workflow_run_steps;
DROP TABLE workflow_runs;
DROP TABLE workflows;
