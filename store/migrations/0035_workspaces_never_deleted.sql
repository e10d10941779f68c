-- +goose Up
-- A workspace is closed (its status), never deleted: nothing in the product deleted one, and
-- its ledger and audit rows must outlive anything a customer does. This migration makes that
-- a rule of the database, and uses it.
--
-- Every row that names a workspace checked it by locking the workspace's row FOR KEY SHARE
-- until its transaction ended: the foreign keys row by row, and 0019's trigger once per
-- statement. That row is the hottest of the database (every settlement updates its balance
-- and event sequence), and a key-share lock on a row that another transaction is updating
-- makes a MultiXact of the two, which every later update of the row and every later lock
-- must resolve. On the SMS path (issue 40) those checks were about 1.2 ms of PostgreSQL's
-- execution per message, and the settlements waited on the row behind them
-- (docs/benchmarks.md, "Two-way SMS under load", 2026-12-02).
--
-- With the row undeletable and its id fixed, a workspace that a statement finds exists for
-- good, so finding it is the whole guarantee and no lock is needed. Each foreign key to
-- workspaces becomes the statement trigger of 0019, without the lock; the violation is still
-- reported as the foreign key's was (SQLSTATE 23503, same constraint name), and a row's
-- workspace_id still never changes (keep_workspace_id).

-- +goose StatementBegin
CREATE FUNCTION keep_workspace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a workspace is never deleted, and its id never changes: close it (status) instead'
        USING ERRCODE = 'restrict_violation', TABLE = 'workspaces';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER workspaces_never_deleted BEFORE DELETE ON workspaces
    FOR EACH ROW EXECUTE FUNCTION keep_workspace();
CREATE TRIGGER workspaces_never_truncated BEFORE TRUNCATE ON workspaces
    FOR EACH STATEMENT EXECUTE FUNCTION keep_workspace();
CREATE TRIGGER workspaces_id_fixed BEFORE UPDATE OF id ON workspaces
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION keep_workspace();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION check_workspace_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing int;
BEGIN
    -- Workspaces are never deleted (workspaces_never_deleted): one that is found stays, so
    -- it is not locked.
    SELECT count(*) INTO missing FROM (SELECT DISTINCT workspace_id AS id FROM new_rows) n
    WHERE NOT EXISTS (SELECT 1 FROM workspaces w WHERE w.id = n.id);
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
DO $$
DECLARE
    fk record;
BEGIN
    FOR fk IN
        SELECT c.conname, c.conrelid::regclass AS tbl, r.relname, a.attname
        FROM pg_constraint c
        JOIN pg_class r ON r.oid = c.conrelid
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
        WHERE c.contype = 'f' AND c.confrelid = 'workspaces'::regclass
        ORDER BY r.relname
    LOOP
        -- The trigger reports the violation under <table>_workspace_id_fkey, reading the
        -- workspace_id column: any other shape is a table this loop was not written for.
        IF fk.attname <> 'workspace_id' OR fk.conname <> fk.relname || '_workspace_id_fkey' THEN
            RAISE EXCEPTION 'unexpected foreign key % on %(%)', fk.conname, fk.tbl, fk.attname;
        END IF;
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows '
            'FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs()', fk.relname || '_workspace_ref', fk.tbl);
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OF workspace_id ON %s FOR EACH ROW '
            'WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id()',
            fk.relname || '_workspace_fixed', fk.tbl);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    -- The tables this migration moved to the trigger: those with one, other than the five of
    -- 0019 and 0020, which never had their foreign key back.
    FOR t IN
        SELECT tg.tgrelid::regclass AS tbl, r.relname
        FROM pg_trigger tg JOIN pg_class r ON r.oid = tg.tgrelid
        WHERE tg.tgname = r.relname || '_workspace_ref'
          AND r.relname NOT IN ('events', 'ledger', 'conversations', 'messages', 'responses')
    LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t.relname || '_workspace_ref', t.tbl);
        EXECUTE format('DROP TRIGGER %I ON %s', t.relname || '_workspace_fixed', t.tbl);
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY (workspace_id) REFERENCES workspaces (id) ON DELETE CASCADE',
            t.tbl, t.relname || '_workspace_id_fkey');
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION check_workspace_refs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    missing int;
BEGIN
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

DROP TRIGGER workspaces_id_fixed ON workspaces;
DROP TRIGGER workspaces_never_truncated ON workspaces;
DROP TRIGGER workspaces_never_deleted ON workspaces;
DROP FUNCTION keep_workspace();
