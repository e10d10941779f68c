-- +goose Up
-- The group commit writes conversations, messages and responses in batches too (one INSERT,
-- one COPY, one INSERT per batch): their workspace references are checked once per statement
-- as well, by the trigger of 0019 (existence, a FOR KEY SHARE lock until the transaction
-- ends, SQLSTATE 23503 under the old constraint's name), and their workspace_id is fixed.
-- Their conversation references stay foreign keys. Deleting a workspace deletes its
-- conversations, and with them (their conversation foreign keys cascade) their messages and
-- responses; a message or response always belongs to a conversation of its own workspace.

ALTER TABLE conversations DROP CONSTRAINT conversations_workspace_id_fkey;
ALTER TABLE messages DROP CONSTRAINT messages_workspace_id_fkey;
ALTER TABLE responses DROP CONSTRAINT responses_workspace_id_fkey;

CREATE TRIGGER conversations_workspace_ref AFTER INSERT ON conversations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER messages_workspace_ref AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER responses_workspace_ref AFTER INSERT ON responses
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER conversations_workspace_fixed BEFORE UPDATE OF workspace_id ON conversations
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();
CREATE TRIGGER messages_workspace_fixed BEFORE UPDATE OF workspace_id ON messages
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();
CREATE TRIGGER responses_workspace_fixed BEFORE UPDATE OF workspace_id ON responses
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION delete_workspace_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM events WHERE workspace_id = OLD.id;
    DELETE FROM ledger WHERE workspace_id = OLD.id;
    DELETE FROM conversations WHERE workspace_id = OLD.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
