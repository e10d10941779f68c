-- +goose Up
-- The group commit writes a batch's messages, responses and ledger rows in one statement
-- each; their foreign keys to conversations checked every row on its own (a query locking the
-- conversation FOR KEY SHARE), about 20% of PostgreSQL's CPU in a stored turn at 64 clients
-- (docs/benchmarks.md, issue 17, ninth pass). The same guarantee is now checked once per
-- statement, as 0019 does for workspaces: every conversation the inserted rows name exists
-- and stays locked FOR KEY SHARE until the transaction ends, so it cannot be deleted under
-- them; the violation is reported as the foreign key's was (SQLSTATE 23503, same name). An
-- update is checked row by row, and only when it changes the conversation, as the foreign
-- key did: checking (and locking) the unchanged conversation of every updated row would let
-- an update of a response and a deletion of its conversation deadlock (the update holds the
-- response and waits for the conversation; the deletion holds the conversation and waits to
-- delete the response). Deleting conversations still deletes their messages and responses and clears
-- the conversation of their ledger rows, now in one statement per table instead of one
-- query per conversation (responses and ledger have no index on conversation_id: each
-- foreign key action scanned them; the workspace joins below use their workspace indexes).
-- pending_actions, webchat_blocked_visitors and campaign_sends keep their foreign keys.

-- +goose StatementBegin
CREATE FUNCTION check_conversation_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing int;
BEGIN
    SELECT count(*) INTO missing
    FROM (SELECT DISTINCT conversation_id AS id FROM new_rows WHERE conversation_id IS NOT NULL) n
    WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.id = n.id FOR KEY SHARE);
    IF missing > 0 THEN
        RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, TG_TABLE_NAME || '_conversation_id_fkey'
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = TG_TABLE_NAME || '_conversation_id_fkey',
                  DETAIL = 'Key (conversation_id) is not present in table "conversations".';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION check_conversation_ref() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM conversations c WHERE c.id = NEW.conversation_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, TG_TABLE_NAME || '_conversation_id_fkey'
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = TG_TABLE_NAME || '_conversation_id_fkey',
                  DETAIL = 'Key (conversation_id) is not present in table "conversations".';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION delete_conversation_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM messages m USING old_rows o WHERE m.conversation_id = o.id;
    DELETE FROM responses r USING old_rows o WHERE r.workspace_id = o.workspace_id AND r.conversation_id = o.id;
    UPDATE ledger l SET conversation_id = NULL FROM old_rows o
    WHERE l.workspace_id = o.workspace_id AND l.conversation_id = o.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;
ALTER TABLE responses DROP CONSTRAINT responses_conversation_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT ledger_conversation_id_fkey;

CREATE TRIGGER messages_conversation_ref AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_conversation_refs();
CREATE TRIGGER responses_conversation_ref AFTER INSERT ON responses
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_conversation_refs();
CREATE TRIGGER ledger_conversation_ref AFTER INSERT ON ledger
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_conversation_refs();
CREATE TRIGGER messages_conversation_ref_update AFTER UPDATE OF conversation_id ON messages FOR EACH ROW
    WHEN (NEW.conversation_id IS DISTINCT FROM OLD.conversation_id AND NEW.conversation_id IS NOT NULL)
    EXECUTE FUNCTION check_conversation_ref();
CREATE TRIGGER responses_conversation_ref_update AFTER UPDATE OF conversation_id ON responses FOR EACH ROW
    WHEN (NEW.conversation_id IS DISTINCT FROM OLD.conversation_id AND NEW.conversation_id IS NOT NULL)
    EXECUTE FUNCTION check_conversation_ref();
CREATE TRIGGER ledger_conversation_ref_update AFTER UPDATE OF conversation_id ON ledger FOR EACH ROW
    WHEN (NEW.conversation_id IS DISTINCT FROM OLD.conversation_id AND NEW.conversation_id IS NOT NULL)
    EXECUTE FUNCTION check_conversation_ref();
CREATE TRIGGER conversations_delete_rows AFTER DELETE ON conversations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION delete_conversation_rows();
