-- +goose Up
-- Every foreign key gets an index leading with its column (TestEveryForeignKeyHasAnIndex).
-- Without one, PostgreSQL finds a parent's children by scanning the child table: each
-- deleted user, API key, OAuth client, upload, deployment or conversation scanned these
-- tables whole to cascade or set null, and every agent turn's read (AgentTurnState) scanned
-- knowledge_sources for its knowledge base's sources, so its cost grew with every other
-- workspace's documents (807 µs against 92 µs with 20,000 sources of other knowledge bases).
--
-- These tables stay small or grow slowly, so their indexes are built here in one transaction
-- (a build blocks their writes for as long as it takes). The tables that grow with traffic
-- are indexed without blocking writes by 0042. Nullable columns get partial indexes: rows
-- that reference nothing are never looked up by the key, and `col = $1` implies the index's
-- `col IS NOT NULL`, so the planner uses them for the key's own queries.
CREATE INDEX knowledge_sources_base_idx ON knowledge_sources (knowledge_base_id);
CREATE INDEX knowledge_sources_upload_idx ON knowledge_sources (upload_id) WHERE upload_id IS NOT NULL;
CREATE INDEX api_keys_created_by_idx ON api_keys (created_by) WHERE created_by IS NOT NULL;
CREATE INDEX pending_actions_key_idx ON pending_actions (key_id) WHERE key_id IS NOT NULL;
CREATE INDEX campaigns_deployment_idx ON campaigns (deployment_id) WHERE deployment_id IS NOT NULL;
CREATE INDEX compliance_acceptances_user_idx ON compliance_acceptances (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX conversation_notes_author_idx ON conversation_notes (author_user_id) WHERE author_user_id IS NOT NULL;
CREATE INDEX oauth_codes_client_idx ON oauth_codes (client_id);
CREATE INDEX oauth_codes_user_idx ON oauth_codes (user_id);
CREATE INDEX oauth_grants_client_idx ON oauth_grants (client_id);
CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id);
CREATE INDEX webchat_blocked_visitors_conversation_idx ON webchat_blocked_visitors (conversation_id);
