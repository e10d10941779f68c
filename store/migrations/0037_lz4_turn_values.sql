-- +goose Up
-- A turn's large values are compressed with lz4 instead of pglz, PostgreSQL's default, where
-- the server was built with lz4 (Debian's and the official images' are). A deployed agent's
-- knowledge search result (messages.tool_results) is about 4.5 kB, over the 2 kB at which
-- PostgreSQL compresses a value, and every turn writes one and reads the earlier ones back
-- in its history window. Measured on this project's PostgreSQL 15 (5,000 rows of a 6.7 kB
-- jsonb tool result, one INSERT): pglz 800 ms, lz4 240 ms (of which about 115 ms is the jsonb
-- parse both pay), so about 110 µs less PostgreSQL CPU per row written; reading them back
-- as text 124 against 96 ms. lz4 compresses less (2.9 against 2.2 kB a row here): disk is
-- cheaper than the CPU of the hot path. The setting applies to values written from now on;
-- values already stored keep their compression and stay readable.
--
-- A server built without lz4 keeps pglz: the migration then changes nothing.

-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE messages ALTER COLUMN content SET COMPRESSION lz4,
            ALTER COLUMN tool_calls SET COMPRESSION lz4, ALTER COLUMN tool_results SET COMPRESSION lz4;
        ALTER TABLE responses ALTER COLUMN body SET COMPRESSION lz4;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE messages ALTER COLUMN content SET COMPRESSION default,
    ALTER COLUMN tool_calls SET COMPRESSION default, ALTER COLUMN tool_results SET COMPRESSION default;
ALTER TABLE responses ALTER COLUMN body SET COMPRESSION default;
