-- +goose Up
-- Trust under failure (issue 48): an audit log of who did what, retention periods, and the
-- erasure of a contact's personal data.

-- The audit log: one row per audited action (package audit names them), written in the
-- transaction of the change it records. Entries are never changed: a trigger refuses UPDATE
-- and DELETE (and TRUNCATE), whoever asks, so no route, bug or erasure can rewrite history.
-- The only way an entry goes is with its workspace (the cascade of deleting the workspace,
-- which the trigger lets through once the workspace row is gone).
CREATE TABLE audit_log (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- The order of entries and the cursor of pages; an identity, so concurrent writers
    -- never share one.
    seq          bigint NOT NULL GENERATED ALWAYS AS IDENTITY UNIQUE,
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Who: a signed-in person (user), an API key (key), an operator at the command line
    -- (operator) or the platform itself (system, e.g. a scheduled job).
    actor_type   text NOT NULL CHECK (actor_type IN ('user', 'key', 'operator', 'system')),
    actor_id     uuid,
    -- The person's email or the key's display prefix, as they were at the time.
    actor_label  text NOT NULL DEFAULT '',
    actor_role   text NOT NULL DEFAULT '',
    action       text NOT NULL,
    target_type  text NOT NULL,
    target_id    text NOT NULL,
    -- What changed (fields and values; never a secret).
    summary      jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_page_idx ON audit_log (workspace_id, seq DESC);
CREATE INDEX audit_log_action_idx ON audit_log (workspace_id, action, seq DESC);
CREATE INDEX audit_log_target_idx ON audit_log (workspace_id, target_id, seq DESC);

-- +goose StatementBegin
CREATE FUNCTION audit_log_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM workspaces WHERE id = OLD.workspace_id) THEN
        RETURN OLD; -- the workspace itself was deleted: its log goes with it
    END IF;
    RAISE EXCEPTION 'audit log entries cannot be changed or deleted'
        USING ERRCODE = 'insufficient_privilege', TABLE = 'audit_log';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_immutable();
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_immutable();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_immutable();

-- Retention: how long a workspace keeps its conversations (NULL: keep everything, the
-- default); an agent's blueprint may set its own (agent.retention_days), which wins for its
-- conversations. The daily retention job (package erasure) deletes what is older.
ALTER TABLE workspaces ADD COLUMN retention_days int CHECK (retention_days BETWEEN 1 AND 36500);
-- The job finds old conversations by their last activity.
CREATE INDEX conversations_retention_idx ON conversations (workspace_id, updated_at);

-- Erasure: an erased contact keeps its row (campaign sends and conversations point at it)
-- with its personal fields blanked, and is hidden like a soft-deleted one.
ALTER TABLE contacts ADD COLUMN erased_at timestamptz;
