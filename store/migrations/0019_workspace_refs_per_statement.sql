-- +goose Up
-- Events and ledger rows are written in batches (the group commit of stored turns, the
-- write-behind meter of ephemeral ones): up to hundreds of rows per statement, all of one
-- workspace. A foreign key checks every row on its own (a query locking the workspace row FOR
-- KEY SHARE), which was a quarter of PostgreSQL's CPU in an ephemeral turn and a tenth in a
-- stored one (docs/benchmarks.md, issue 17). The same guarantee is now checked once per
-- statement: every workspace the inserted rows name exists and stays locked FOR KEY SHARE
-- until the transaction ends, as with the foreign key, so it cannot be deleted under them;
-- deleting a workspace still deletes its events and ledger rows; a row's workspace_id never
-- changes. The violation is reported as the foreign key's was (SQLSTATE 23503, same name).

-- +goose StatementBegin
CREATE FUNCTION check_workspace_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing int;
BEGIN
    -- One query (a second one, or an array of the ids, costs as much again per statement):
    -- the EXISTS locks each workspace it finds.
    SELECT count(*) INTO missing FROM (SELECT DISTINCT workspace_id AS id FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = n.id FOR KEY SHARE);
    IF missing > 0 THEN
        RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, TG_TABLE_NAME || '_workspace_id_fkey'
            USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = TG_TABLE_NAME || '_workspace_id_fkey',
                  DETAIL = 'Key (workspace_id) is not present in table "workspaces".';
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION keep_workspace_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the workspace_id of a row of "%" cannot change', TG_TABLE_NAME
        USING ERRCODE = 'foreign_key_violation', TABLE = TG_TABLE_NAME, CONSTRAINT = TG_TABLE_NAME || '_workspace_id_fkey';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION delete_workspace_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM events WHERE workspace_id = OLD.id;
    DELETE FROM ledger WHERE workspace_id = OLD.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

ALTER TABLE events DROP CONSTRAINT events_workspace_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT ledger_workspace_id_fkey;

CREATE TRIGGER events_workspace_ref AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER ledger_workspace_ref AFTER INSERT ON ledger
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER events_workspace_fixed BEFORE UPDATE OF workspace_id ON events
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();
CREATE TRIGGER ledger_workspace_fixed BEFORE UPDATE OF workspace_id ON ledger
    FOR EACH ROW WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();
CREATE TRIGGER workspaces_delete_events_ledger AFTER DELETE ON workspaces
    FOR EACH ROW EXECUTE FUNCTION delete_workspace_rows();
