-- +goose NO TRANSACTION
-- +goose Up
-- The foreign-key indexes of the tables that grow with traffic (see 0041), built
-- CONCURRENTLY so that conversations, campaign sends, calls and workflow runs keep taking
-- writes while a replica migrates a large database. A concurrent build cannot run in a
-- transaction, hence this file's own. A build that fails (or a replica killed during one)
-- leaves an invalid index under its name, which IF NOT EXISTS would keep: each build drops
-- its index first, so running the file again after a failure rebuilds them all.
DROP INDEX CONCURRENTLY IF EXISTS conversations_assignee_idx;
CREATE INDEX CONCURRENTLY conversations_assignee_idx ON conversations (assignee_user_id) WHERE assignee_user_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS campaign_sends_contact_idx;
CREATE INDEX CONCURRENTLY campaign_sends_contact_idx ON campaign_sends (contact_id);
DROP INDEX CONCURRENTLY IF EXISTS campaign_sends_conversation_idx;
CREATE INDEX CONCURRENTLY campaign_sends_conversation_idx ON campaign_sends (conversation_id) WHERE conversation_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS voice_calls_agent_idx;
CREATE INDEX CONCURRENTLY voice_calls_agent_idx ON voice_calls (agent_id) WHERE agent_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS voice_calls_campaign_send_idx;
CREATE INDEX CONCURRENTLY voice_calls_campaign_send_idx ON voice_calls (campaign_send_id) WHERE campaign_send_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS voice_calls_conversation_idx;
CREATE INDEX CONCURRENTLY voice_calls_conversation_idx ON voice_calls (conversation_id) WHERE conversation_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS workflow_runs_contact_idx;
CREATE INDEX CONCURRENTLY workflow_runs_contact_idx ON workflow_runs (contact_id) WHERE contact_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS workflow_runs_conversation_idx;
CREATE INDEX CONCURRENTLY workflow_runs_conversation_idx ON workflow_runs (conversation_id) WHERE conversation_id IS NOT NULL;
