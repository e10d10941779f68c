-- +goose Up
-- A knowledge base's generation counts the changes of its chunks: every statement that adds,
-- changes or removes chunks (an ingestion, a language change that recomputes their
-- tsvectors, a source deleted with its chunks) adds one. A process that keeps a knowledge
-- base's chunks in memory to search them (store.searchIndexes) uses its copy only while the
-- generation read with the turn is the copy's, so a change made by any replica is seen by the
-- next search, with no announcement to miss. A chunk's statement finds its knowledge base
-- through its source; a source's own deletion bumps it too, since the chunks deleted with it
-- (ON DELETE CASCADE) no longer find their source.
ALTER TABLE knowledge_bases ADD COLUMN generation bigint NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE FUNCTION knowledge_chunks_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE knowledge_bases b SET generation = b.generation + 1
        WHERE b.id IN (SELECT s.knowledge_base_id FROM knowledge_sources s WHERE s.id IN (SELECT source_id FROM old_rows));
    ELSE
        UPDATE knowledge_bases b SET generation = b.generation + 1
        WHERE b.id IN (SELECT s.knowledge_base_id FROM knowledge_sources s WHERE s.id IN (SELECT source_id FROM new_rows));
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION knowledge_sources_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE knowledge_bases b SET generation = b.generation + 1
    WHERE b.id IN (SELECT knowledge_base_id FROM old_rows);
    RETURN NULL;
END $$;
-- +goose StatementEnd
-- A trigger with transition tables takes one event (PostgreSQL), hence three.
CREATE TRIGGER knowledge_chunks_inserted AFTER INSERT ON knowledge_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_changed();
CREATE TRIGGER knowledge_chunks_updated AFTER UPDATE ON knowledge_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_changed();
CREATE TRIGGER knowledge_chunks_deleted AFTER DELETE ON knowledge_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_chunks_changed();
CREATE TRIGGER knowledge_sources_deleted AFTER DELETE ON knowledge_sources
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_sources_deleted();

-- +goose Down
DROP TRIGGER knowledge_sources_deleted ON knowledge_sources;
DROP TRIGGER knowledge_chunks_deleted ON knowledge_chunks;
DROP TRIGGER knowledge_chunks_updated ON knowledge_chunks;
DROP TRIGGER knowledge_chunks_inserted ON knowledge_chunks;
DROP FUNCTION knowledge_sources_deleted();
DROP FUNCTION knowledge_chunks_changed();
ALTER TABLE knowledge_bases DROP COLUMN generation;
