-- +goose Up
-- A message's size in bytes (its text and JSON, as the history window counts them), stored
-- with the row. The window of a turn (HistoryWindow, AgentTurnState) sums the sizes of the
-- newest messages to know where to stop; computed at read time, that sum detoasted and
-- printed every tool result of the window (a deployed agent's knowledge search results,
-- about 5 kB each) on every turn, only to count its bytes, before the rows were read again
-- to be sent. Measured on PostgreSQL 15 with 16 messages of a conversation, 4 of them 5 kB
-- tool results (EXPLAIN ANALYZE, three times each): 0.88-1.09 ms computed, 0.42-0.66 ms
-- stored. The value is the same expression the queries used, so the window is unchanged.
-- Adding a stored generated column rewrites the table once.
ALTER TABLE messages ADD COLUMN bytes int GENERATED ALWAYS AS (
    octet_length(content) + coalesce(octet_length(tool_calls::text), 0) + coalesce(octet_length(tool_results::text), 0)) STORED;

-- A tool result that compresses under 4 kB stays in the row instead of the TOAST table
-- (PostgreSQL moves values out of line once a row passes toast_tuple_target, 2 kB by
-- default): a turn's write then skips the TOAST table's row and index entry, and each later
-- turn's history read the index lookup and second heap fetch. Measured on PostgreSQL 15,
-- 5,000 rows of a 5.2 kB jsonb tool result (lz4, 2.6 kB compressed), twice each: INSERT 408
-- and 423 ms at the default, 361 and 385 ms at 4080; reading them all back as text 523 and
-- 452 ms against 228 and 184 ms. Rows written before keep their TOAST values.
ALTER TABLE messages SET (toast_tuple_target = 4080);

-- conversations_retention_idx (0028) has the columns of conversations_activity_idx (0024) in
-- the same order (a B-tree is read both ways), so it served nothing the other does not, and
-- every turn's update of updated_at wrote both.
DROP INDEX conversations_retention_idx;

-- +goose Down
ALTER TABLE messages RESET (toast_tuple_target);
CREATE INDEX conversations_retention_idx ON conversations (workspace_id, updated_at);
ALTER TABLE messages DROP COLUMN bytes;
