-- +goose Up
-- Knowledge is searched in its agent's language: "Sundays" finds "Sunday" in English,
-- "dimanches" finds "dimanche" in French. A knowledge base keeps the PostgreSQL text search
-- configuration of its agent's language (knowledge_ts_config; 'simple', no stemming, for a
-- language PostgreSQL has no configuration for), and each chunk is indexed with it.
--
-- Three triggers keep it so without any caller having to remember: a new knowledge base takes
-- its agent's language, a new chunk its knowledge base's, and an agent whose language changes
-- has its chunks indexed again in the same transaction (each chunk's tsv is recomputed: a
-- language change of a 100,000-chunk agent takes seconds, and language changes are rare).

-- +goose StatementBegin
CREATE FUNCTION knowledge_ts_config(language text) RETURNS regconfig
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (CASE split_part(lower(coalesce(language, '')), '-', 1)
        WHEN 'ar' THEN 'arabic' WHEN 'hy' THEN 'armenian' WHEN 'eu' THEN 'basque'
        WHEN 'ca' THEN 'catalan' WHEN 'da' THEN 'danish' WHEN 'nl' THEN 'dutch'
        WHEN 'en' THEN 'english' WHEN 'fi' THEN 'finnish' WHEN 'fr' THEN 'french'
        WHEN 'de' THEN 'german' WHEN 'el' THEN 'greek' WHEN 'hi' THEN 'hindi'
        WHEN 'hu' THEN 'hungarian' WHEN 'id' THEN 'indonesian' WHEN 'ga' THEN 'irish'
        WHEN 'it' THEN 'italian' WHEN 'lt' THEN 'lithuanian' WHEN 'ne' THEN 'nepali'
        WHEN 'no' THEN 'norwegian' WHEN 'nb' THEN 'norwegian' WHEN 'nn' THEN 'norwegian'
        WHEN 'pt' THEN 'portuguese' WHEN 'ro' THEN 'romanian' WHEN 'ru' THEN 'russian'
        WHEN 'sr' THEN 'serbian' WHEN 'es' THEN 'spanish' WHEN 'sv' THEN 'swedish'
        WHEN 'ta' THEN 'tamil' WHEN 'tr' THEN 'turkish' WHEN 'yi' THEN 'yiddish'
        ELSE 'simple' END)::regconfig
$$;
-- +goose StatementEnd

ALTER TABLE knowledge_bases ADD COLUMN ts_config regconfig NOT NULL DEFAULT 'simple';
UPDATE knowledge_bases b SET ts_config = knowledge_ts_config(a.blueprint->>'language')
FROM agents a WHERE a.id = b.agent_id;

ALTER TABLE knowledge_chunks ADD COLUMN ts_config regconfig NOT NULL DEFAULT 'simple';
UPDATE knowledge_chunks k SET ts_config = b.ts_config
FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
WHERE s.id = k.source_id AND b.ts_config <> 'simple'::regconfig;

DROP INDEX knowledge_chunks_tsv_idx;
ALTER TABLE knowledge_chunks DROP COLUMN tsv;
ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector(ts_config, title || ' ' || content)) STORED;
CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING gin (tsv);

-- +goose StatementBegin
CREATE FUNCTION knowledge_base_language() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.ts_config := knowledge_ts_config((SELECT blueprint->>'language' FROM agents WHERE id = NEW.agent_id));
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER knowledge_base_language BEFORE INSERT ON knowledge_bases
FOR EACH ROW EXECUTE FUNCTION knowledge_base_language();

-- Stored generated columns are computed after BEFORE triggers, so tsv uses the config set here.
-- +goose StatementBegin
CREATE FUNCTION knowledge_chunk_language() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.ts_config := (SELECT b.ts_config FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
                      WHERE s.id = NEW.source_id);
    RETURN NEW;
END $$;
-- +goose StatementEnd
CREATE TRIGGER knowledge_chunk_language BEFORE INSERT ON knowledge_chunks
FOR EACH ROW EXECUTE FUNCTION knowledge_chunk_language();

-- +goose StatementBegin
CREATE FUNCTION agent_knowledge_language() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cfg regconfig := knowledge_ts_config(NEW.blueprint->>'language');
BEGIN
    UPDATE knowledge_bases SET ts_config = cfg WHERE agent_id = NEW.id AND ts_config <> cfg;
    IF FOUND THEN
        UPDATE knowledge_chunks k SET ts_config = cfg
        FROM knowledge_sources s JOIN knowledge_bases b ON b.id = s.knowledge_base_id
        WHERE b.agent_id = NEW.id AND s.id = k.source_id;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER agent_knowledge_language AFTER UPDATE OF blueprint ON agents
FOR EACH ROW WHEN (OLD.blueprint->>'language' IS DISTINCT FROM NEW.blueprint->>'language')
EXECUTE FUNCTION agent_knowledge_language();

-- +goose Down
DROP TRIGGER agent_knowledge_language ON agents;
DROP FUNCTION agent_knowledge_language();
DROP TRIGGER knowledge_chunk_language ON knowledge_chunks;
DROP FUNCTION knowledge_chunk_language();
DROP TRIGGER knowledge_base_language ON knowledge_bases;
DROP FUNCTION knowledge_base_language();
DROP INDEX knowledge_chunks_tsv_idx;
ALTER TABLE knowledge_chunks DROP COLUMN tsv;
ALTER TABLE knowledge_chunks DROP COLUMN ts_config;
ALTER TABLE knowledge_chunks ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || content)) STORED;
CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING gin (tsv);
ALTER TABLE knowledge_bases DROP COLUMN ts_config;
DROP FUNCTION knowledge_ts_config(text);
