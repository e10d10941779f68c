-- +goose Up
-- What a knowledge search costs PostgreSQL (issue 49 item 3, docs/benchmarks.md "Knowledge
-- search"), measured on 10,000 chunks:
--
-- The GIN index's pending list is off. With fastupdate on, a chunk's entries first go to an
-- unsorted pending list (up to gin_pending_list_limit, 4 MB) that every search reads in full
-- until a vacuum merges it: after an upload of 10,000 chunks, 441 pending pages made a search
-- cost 7.4 ms of PostgreSQL CPU instead of 0.6 ms, and a deployed agent is searched right after
-- its knowledge is ingested. Inserting a chunk now updates the index in place: storing 10,000
-- chunks took 12.8 s instead of 6.1 s (with the vacuum) on the loaded 2-core machine, in the
-- background of a crawl or upload.
--
-- The tsvector stays in the row. A row of a 1,000-character chunk is about 2.2 kB with its
-- 1.2 kB tsvector, over the 2 kB at which PostgreSQL compresses and moves values out of line,
-- so the tsvector of most chunks went to TOAST, and ranking a candidate read it from there (a
-- TOAST index and heap lookup each). toast_tuple_target = 8160 leaves rows up to a page
-- whole. It applies to rows written from now on: chunks already stored keep their TOAST
-- values until their source is crawled or uploaded again.
ALTER INDEX knowledge_chunks_tsv_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('knowledge_chunks_tsv_idx'::regclass);
ALTER TABLE knowledge_chunks SET (toast_tuple_target = 8160);

-- +goose Down
ALTER TABLE knowledge_chunks RESET (toast_tuple_target);
ALTER INDEX knowledge_chunks_tsv_idx RESET (fastupdate);
