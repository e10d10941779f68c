-- +goose Up
-- What a knowledge search costs PostgreSQL (issue 49 item 3, docs/benchmarks.md "Knowledge
-- search"), measured on 10,000 chunks:
--
-- The GIN indexes' pending lists are emptied after each ingestion (store.AddChunks calls
-- gin_clean_pending_list). With fastupdate on, a chunk's entries first go to an unsorted
-- pending list (up to gin_pending_list_limit, 4 MB) that every search reads in full until a
-- vacuum merges it: after an upload of 10,000 chunks, 441 pending pages made a search cost
-- 64 ms of PostgreSQL CPU instead of 0.65 ms, and a deployed agent is searched right after
-- its knowledge is ingested. fastupdate off did the same at twice the cost of storing the
-- chunks (each insert updating the index in place); merging the list once is a tenth of it.
-- Only an owner of an index may merge its list: a role that is not skips it, and autovacuum
-- merges it later.

-- +goose StatementBegin
CREATE FUNCTION knowledge_clean_pending() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM gin_clean_pending_list(c.oid::regclass) FROM pg_class c
    WHERE c.oid IN (to_regclass('knowledge_chunks_tsv_idx'), to_regclass('knowledge_chunks_repeated_idx'))
        AND pg_has_role(c.relowner, 'USAGE');
END $$;
-- +goose StatementEnd

-- A second tsvector of each chunk, tsv_repeated, holds the lexemes that occur more than once
-- in it, with a GIN index of its own. The last tier of a search (any one of the query's terms:
-- the tiers above found no chunk with two) ranks its matches by ts_rank, which for a chunk
-- holding one of the terms grows with how often it occurs: every chunk in which the term
-- occurs twice or more ranks above every chunk in which it occurs once. So that tier ranks
-- the chunks this index finds (about a tenth of the matches of a common word, read from an
-- index a tenth the size) and takes the rest, all equal, only when they are fewer than asked.
--
-- The tsvector stays in the row. A row of a 1,000-character chunk is about 2.2 kB with its
-- 1.2 kB tsvector, over the 2 kB at which PostgreSQL compresses and moves values out of line,
-- so the tsvector of most chunks went to TOAST, and ranking a candidate read it from there (a
-- TOAST index and heap lookup each). toast_tuple_target = 8160 leaves rows up to a page
-- whole; adding tsv_repeated rewrites the table, which brings the tsvectors of chunks already
-- stored back into their rows.
ALTER TABLE knowledge_chunks SET (toast_tuple_target = 8160);

-- +goose StatementBegin
CREATE FUNCTION knowledge_repeated(v tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT AS $$
    SELECT coalesce(array_to_tsvector(array_agg(u.lexeme)), ''::tsvector)
    FROM unnest(v) u WHERE cardinality(u.positions) > 1
$$;
-- +goose StatementEnd
ALTER TABLE knowledge_chunks ADD COLUMN tsv_repeated tsvector
    GENERATED ALWAYS AS (knowledge_repeated(to_tsvector(ts_config, title || ' ' || content))) STORED;
CREATE INDEX knowledge_chunks_repeated_idx ON knowledge_chunks USING gin (tsv_repeated);

-- +goose Down
DROP INDEX knowledge_chunks_repeated_idx;
ALTER TABLE knowledge_chunks DROP COLUMN tsv_repeated;
DROP FUNCTION knowledge_repeated(tsvector);
DROP FUNCTION knowledge_clean_pending();
ALTER TABLE knowledge_chunks RESET (toast_tuple_target);
