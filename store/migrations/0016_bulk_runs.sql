-- +goose Up
-- The bulk tools (package bulk). A destructive bulk call parks one confirmation; over MCP the
-- parked action belongs to no conversation (the caller confirms it with confirm_action), and
-- a confirmation whose matching set grew by more than 10% since it was parked resolves as
-- `aborted_drift` and runs nothing.
ALTER TABLE pending_actions ALTER COLUMN conversation_id DROP NOT NULL;
ALTER TABLE pending_actions DROP CONSTRAINT pending_actions_status_check;
ALTER TABLE pending_actions ADD CONSTRAINT pending_actions_status_check
    CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'aborted_drift'));

-- One bulk action as it runs: one job works it in bounded batches (one transaction each), and
-- records its progress here after every batch, so the caller (or a later look) sees how far
-- it got. spec is the tool's input and the frozen moment (cutoff) its set was computed at:
-- rows created after it are never touched.
CREATE TABLE bulk_runs (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id     uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id         text NOT NULL UNIQUE CHECK (short_id LIKE 'bulk_%'),
    tool             text NOT NULL,
    spec             jsonb NOT NULL,
    status           text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'failed')),
    requested        int NOT NULL,
    affected         int NOT NULL DEFAULT 0,
    skipped          jsonb NOT NULL DEFAULT '[]',
    sample           jsonb NOT NULL DEFAULT '[]',
    batches          int NOT NULL DEFAULT 0,
    -- the longest single batch transaction, in milliseconds (how long it held its locks)
    longest_batch_ms int NOT NULL DEFAULT 0,
    error            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX bulk_runs_workspace_idx ON bulk_runs (workspace_id, created_at DESC);
