-- +goose Up
-- Which events mention which conversations and contacts, so that erasing one (a contact's
-- erasure, the retention job's batches) finds its events by an index instead of matching
-- every event of the workspace against LIKE '%id%' patterns: over 200,000 events a batch
-- of 200 conversations (400 patterns) took 27-34 s, 133-168 µs an event, and events are never
-- deleted (docs/benchmarks.md, the retention job). Nothing on the request path writes here:
-- the daily retention job records, in the workspaces where something can expire, the mentions
-- of the events appended since its last run
-- (store.IndexEventMentions), and a tombstone reads these rows up to event_mentions_indexed's
-- seq and matches the events after it as before.
--
-- mention is the id as an envelope writes it: a conversation's short id or UUID, or a
-- contact's UUID. Only ids of the workspace's own conversations and contacts are kept.
CREATE TABLE event_mentions (
    workspace_id uuid NOT NULL,
    mention      text NOT NULL,
    seq          bigint NOT NULL,
    PRIMARY KEY (workspace_id, mention, seq)
);

-- How far a workspace's events have had their mentions recorded (every seq at or below).
CREATE TABLE event_mentions_indexed (
    workspace_id uuid PRIMARY KEY,
    through_seq  bigint NOT NULL
);

-- Their workspaces are checked by statement, as every table's are (migration 0035).
CREATE TRIGGER event_mentions_workspace_ref AFTER INSERT ON event_mentions REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER event_mentions_workspace_fixed BEFORE UPDATE OF workspace_id ON event_mentions FOR EACH ROW
    WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();
CREATE TRIGGER event_mentions_indexed_workspace_ref AFTER INSERT ON event_mentions_indexed REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION check_workspace_refs();
CREATE TRIGGER event_mentions_indexed_workspace_fixed BEFORE UPDATE OF workspace_id ON event_mentions_indexed FOR EACH ROW
    WHEN (OLD.workspace_id IS DISTINCT FROM NEW.workspace_id) EXECUTE FUNCTION keep_workspace_id();

-- +goose Down
DROP TABLE event_mentions_indexed;
DROP TABLE event_mentions;
