-- +goose Up
-- Uploaded files (the raw bytes of text, Markdown, HTML and PDF documents) and what the
-- non-crawl knowledge sources need: the upload a file source reads, the text of a
-- manual_text source, and the `pending` state of a source waiting for (or in) ingestion.

CREATE TABLE uploads (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    short_id     text NOT NULL UNIQUE CHECK (short_id LIKE 'upl\_%'),
    -- The name given at upload; a relative path such as kb/faq.md, which markdown_file and
    -- file_upload sources name in their `path`.
    filename     text NOT NULL,
    content_type text NOT NULL CHECK (content_type IN ('text/plain', 'text/markdown', 'text/html', 'application/pdf')),
    bytes        int NOT NULL CHECK (bytes >= 0),
    sha256       text NOT NULL,
    content      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX uploads_filename_idx ON uploads (workspace_id, filename, created_at DESC);

ALTER TABLE knowledge_sources
    ADD COLUMN upload_id uuid REFERENCES uploads (id) ON DELETE SET NULL,
    ADD COLUMN text text;
ALTER TABLE knowledge_sources DROP CONSTRAINT knowledge_sources_status_check;
ALTER TABLE knowledge_sources ADD CONSTRAINT knowledge_sources_status_check
    CHECK (status IN ('pending', 'queued', 'crawling', 'ready', 'failed'));
-- Sources waiting for an upload of their path are found when that file arrives.
CREATE INDEX knowledge_sources_waiting_idx ON knowledge_sources (workspace_id, path)
    WHERE status = 'pending' AND upload_id IS NULL;
