-- The bulk tools' sets (package bulk). Each set is written three times (count, sample of five,
-- one bounded batch) with the same conditions: the tool's filter keys (an empty key matches
-- all), or an explicit id list (by_ids), and never a row created after the cutoff, the moment
-- the set was computed. A batch takes at most max_rows rows, so it locks little and briefly;
-- it waits for a row another transaction holds (a turn writing a conversation, a campaign
-- sending) rather than skip it, so that no row of the set is left behind.

-- name: BulkCountConversations :one
SELECT count(*) FROM conversations
WHERE workspace_id = @workspace_id AND created_at <= @cutoff
  AND (NOT @by_ids::bool OR id = ANY(@ids::uuid[]) OR short_id = ANY(@refs::text[]))
  AND (@status::text = '' OR status = @status::text)
  AND (@channel::text = '' OR channel = @channel::text)
  AND (sqlc.narg('contact_id')::uuid IS NULL OR contact_id = sqlc.narg('contact_id')::uuid)
  AND (@source::text = '' OR (@source::text = 'assistant' AND agent_id IS NULL) OR (@source::text = 'agent' AND agent_id IS NOT NULL))
  AND (sqlc.narg('older_than')::timestamptz IS NULL OR created_at < sqlc.narg('older_than')::timestamptz)
  AND (sqlc.narg('exclude_id')::uuid IS NULL OR id <> sqlc.narg('exclude_id')::uuid);

-- name: BulkSampleConversations :many
SELECT short_id, channel, status, created_at FROM conversations
WHERE workspace_id = @workspace_id AND created_at <= @cutoff
  AND (NOT @by_ids::bool OR id = ANY(@ids::uuid[]) OR short_id = ANY(@refs::text[]))
  AND (@status::text = '' OR status = @status::text)
  AND (@channel::text = '' OR channel = @channel::text)
  AND (sqlc.narg('contact_id')::uuid IS NULL OR contact_id = sqlc.narg('contact_id')::uuid)
  AND (@source::text = '' OR (@source::text = 'assistant' AND agent_id IS NULL) OR (@source::text = 'agent' AND agent_id IS NOT NULL))
  AND (sqlc.narg('older_than')::timestamptz IS NULL OR created_at < sqlc.narg('older_than')::timestamptz)
  AND (sqlc.narg('exclude_id')::uuid IS NULL OR id <> sqlc.narg('exclude_id')::uuid)
ORDER BY created_at DESC, id LIMIT 5;

-- name: BulkDeleteConversations :execrows
-- Messages, stored responses and pending actions go with their conversation (ON DELETE
-- CASCADE); the ledger keeps its rows, without the conversation.
--
-- The batch's rows are locked in id order, the order in which a group commit updates the
-- conversations it continues, so the two never deadlock (TestABulkDeleteLocksConversations-
-- InIDOrder): the batch is picked without a lock, then locked sorted, which sorts only its
-- own max_rows ids. The conditions on what a conversation's writers change (its status,
-- contact and agent) are written again where the rows are locked, so that a row changed
-- before its lock was granted is checked again as it now is.
DELETE FROM conversations WHERE id IN (
    SELECT l.id FROM conversations l
    WHERE l.id IN (
        SELECT c.id FROM conversations c
        WHERE c.workspace_id = @workspace_id AND c.created_at <= @cutoff
          AND (NOT @by_ids::bool OR c.id = ANY(@ids::uuid[]) OR c.short_id = ANY(@refs::text[]))
          AND (@status::text = '' OR c.status = @status::text)
          AND (@channel::text = '' OR c.channel = @channel::text)
          AND (sqlc.narg('contact_id')::uuid IS NULL OR c.contact_id = sqlc.narg('contact_id')::uuid)
          AND (@source::text = '' OR (@source::text = 'assistant' AND c.agent_id IS NULL) OR (@source::text = 'agent' AND c.agent_id IS NOT NULL))
          AND (sqlc.narg('older_than')::timestamptz IS NULL OR c.created_at < sqlc.narg('older_than')::timestamptz)
          AND (sqlc.narg('exclude_id')::uuid IS NULL OR c.id <> sqlc.narg('exclude_id')::uuid)
        LIMIT @max_rows)
      AND l.workspace_id = @workspace_id
      AND (@status::text = '' OR l.status = @status::text)
      AND (sqlc.narg('contact_id')::uuid IS NULL OR l.contact_id = sqlc.narg('contact_id')::uuid)
      AND (@source::text = '' OR (@source::text = 'assistant' AND l.agent_id IS NULL) OR (@source::text = 'agent' AND l.agent_id IS NOT NULL))
    ORDER BY l.id
    FOR UPDATE OF l);

-- name: BulkCountChannels :one
SELECT count(*) FROM channels ch
WHERE ch.workspace_id = @workspace_id AND ch.created_at <= @cutoff
  AND (NOT @by_ids::bool OR ch.id = ANY(@ids::uuid[]))
  AND (@provider::text = '' OR ch.provider = @provider::text)
  AND (@status::text = ''
       OR (@status::text = 'deployed' AND EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id))
       OR (@status::text = 'unused' AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id)));

-- name: BulkSampleChannels :many
SELECT ch.id, ch.name, ch.provider FROM channels ch
WHERE ch.workspace_id = @workspace_id AND ch.created_at <= @cutoff
  AND (NOT @by_ids::bool OR ch.id = ANY(@ids::uuid[]))
  AND (@provider::text = '' OR ch.provider = @provider::text)
  AND (@status::text = ''
       OR (@status::text = 'deployed' AND EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id))
       OR (@status::text = 'unused' AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id)))
ORDER BY ch.created_at DESC, ch.id LIMIT 5;

-- name: BulkDeleteChannels :execrows
-- Their deployments go with them (ON DELETE CASCADE).
DELETE FROM channels WHERE id IN (
    SELECT ch.id FROM channels ch
    WHERE ch.workspace_id = @workspace_id AND ch.created_at <= @cutoff
      AND (NOT @by_ids::bool OR ch.id = ANY(@ids::uuid[]))
      AND (@provider::text = '' OR ch.provider = @provider::text)
      AND (@status::text = ''
           OR (@status::text = 'deployed' AND EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id))
           OR (@status::text = 'unused' AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.channel_id = ch.id)))
    LIMIT @max_rows
    FOR UPDATE);

-- name: BulkCountDeployments :one
SELECT count(*) FROM deployments
WHERE workspace_id = @workspace_id AND created_at <= @cutoff
  AND (NOT @by_ids::bool OR id = ANY(@ids::uuid[]))
  AND (sqlc.narg('agent_id')::uuid IS NULL OR agent_id = sqlc.narg('agent_id')::uuid)
  AND (sqlc.narg('channel_id')::uuid IS NULL OR channel_id = sqlc.narg('channel_id')::uuid);

-- name: BulkSampleDeployments :many
SELECT d.id, a.name AS agent_name, d.channel_type, coalesce(ch.name, '') AS channel_name
FROM deployments d JOIN agents a ON a.id = d.agent_id
LEFT JOIN channels ch ON ch.id = d.channel_id
WHERE d.workspace_id = @workspace_id AND d.created_at <= @cutoff
  AND (NOT @by_ids::bool OR d.id = ANY(@ids::uuid[]))
  AND (sqlc.narg('agent_id')::uuid IS NULL OR d.agent_id = sqlc.narg('agent_id')::uuid)
  AND (sqlc.narg('channel_id')::uuid IS NULL OR d.channel_id = sqlc.narg('channel_id')::uuid)
ORDER BY d.created_at DESC, d.id LIMIT 5;

-- name: BulkDeleteDeployments :execrows
DELETE FROM deployments WHERE id IN (
    SELECT d.id FROM deployments d
    WHERE d.workspace_id = @workspace_id AND d.created_at <= @cutoff
      AND (NOT @by_ids::bool OR d.id = ANY(@ids::uuid[]))
      AND (sqlc.narg('agent_id')::uuid IS NULL OR d.agent_id = sqlc.narg('agent_id')::uuid)
      AND (sqlc.narg('channel_id')::uuid IS NULL OR d.channel_id = sqlc.narg('channel_id')::uuid)
    LIMIT @max_rows
    FOR UPDATE);

-- name: CreateBulkRun :exec
INSERT INTO bulk_runs (id, workspace_id, short_id, tool, spec, requested, sample, skipped)
VALUES (@id, @workspace_id, @short_id, @tool, @spec, @requested, @sample, @skipped);

-- name: BulkRunProgress :exec
UPDATE bulk_runs SET affected = affected + sqlc.arg(added)::int, batches = batches + 1,
    longest_batch_ms = greatest(longest_batch_ms, sqlc.arg(batch_ms)::int)
WHERE workspace_id = @workspace_id AND id = @id;

-- name: FinishBulkRun :exec
UPDATE bulk_runs SET status = @status, error = sqlc.narg('error'), finished_at = now()
WHERE workspace_id = @workspace_id AND id = @id AND status = 'running';

-- name: BulkRunByID :one
SELECT * FROM bulk_runs WHERE workspace_id = @workspace_id AND id = @id;

-- name: BulkRunByShortID :one
SELECT * FROM bulk_runs WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: ActionByShortIDForUpdate :one
-- A parked action confirmed by its id (MCP confirm_action), locked until the confirming
-- transaction ends.
SELECT * FROM pending_actions WHERE workspace_id = @workspace_id AND short_id = @short_id FOR UPDATE;

-- name: BulkCountContacts :one
-- Contacts: live ones only (a soft-deleted contact is not deleted twice).
SELECT count(*) FROM contacts k
WHERE k.workspace_id = @workspace_id AND k.created_at <= @cutoff AND k.deleted_at IS NULL
  AND (NOT @by_ids::bool OR k.id = ANY(@ids::uuid[]))
  AND (@tag::text = '' OR @tag::text = ANY(k.tags))
  AND (sqlc.narg('list_id')::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_list_members m WHERE m.list_id = sqlc.narg('list_id')::uuid AND m.contact_id = k.id));

-- name: BulkSampleContacts :many
SELECT k.id, coalesce(nullif(k.name, ''), nullif(k.phone, ''), nullif(k.email, ''), k.id::text)::text AS label FROM contacts k
WHERE k.workspace_id = @workspace_id AND k.created_at <= @cutoff AND k.deleted_at IS NULL
  AND (NOT @by_ids::bool OR k.id = ANY(@ids::uuid[]))
  AND (@tag::text = '' OR @tag::text = ANY(k.tags))
  AND (sqlc.narg('list_id')::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_list_members m WHERE m.list_id = sqlc.narg('list_id')::uuid AND m.contact_id = k.id))
ORDER BY k.created_at DESC, k.id LIMIT 5;

-- name: BulkSoftDeleteContacts :execrows
-- A soft delete: the contact is hidden and never messaged, and can be restored.
--
-- The batch's rows are locked in id order, as BulkDeleteConversations locks its own and as a
-- CSV import locks the contacts it updates (LockLiveContactsByPhone), so the two never
-- deadlock: the batch is picked without a lock, then locked sorted. The conditions a
-- contact's writers change (deleted, its tags) are written again where the rows are locked.
UPDATE contacts SET deleted_at = now(), updated_at = now() WHERE id IN (
    SELECT l.id FROM contacts l
    WHERE l.id IN (
        SELECT k.id FROM contacts k
        WHERE k.workspace_id = @workspace_id AND k.created_at <= @cutoff AND k.deleted_at IS NULL
          AND (NOT @by_ids::bool OR k.id = ANY(@ids::uuid[]))
          AND (@tag::text = '' OR @tag::text = ANY(k.tags))
          AND (sqlc.narg('list_id')::uuid IS NULL OR EXISTS (SELECT 1 FROM contact_list_members m WHERE m.list_id = sqlc.narg('list_id')::uuid AND m.contact_id = k.id))
        LIMIT @max_rows)
      AND l.workspace_id = @workspace_id AND l.deleted_at IS NULL
      AND (@tag::text = '' OR @tag::text = ANY(l.tags))
    ORDER BY l.id
    FOR UPDATE OF l);

-- name: BulkCountCampaigns :one
-- Campaigns: statuses lists the statuses the tool may touch (delete: all but running unless
-- opted in; cancel: the in-flight ones).
SELECT count(*) FROM campaigns
WHERE workspace_id = @workspace_id AND created_at <= @cutoff
  AND (NOT @by_ids::bool OR id = ANY(@ids::uuid[]))
  AND (@status::text = '' OR status = @status::text)
  AND status = ANY(@statuses::text[]);

-- name: BulkSampleCampaigns :many
SELECT id, name, status FROM campaigns
WHERE workspace_id = @workspace_id AND created_at <= @cutoff
  AND (NOT @by_ids::bool OR id = ANY(@ids::uuid[]))
  AND (@status::text = '' OR status = @status::text)
  AND status = ANY(@statuses::text[])
ORDER BY created_at DESC, id LIMIT @max_rows;

-- name: BulkDeleteCampaigns :execrows
-- Their sends go with them (ON DELETE CASCADE); the conversations they opened stay.
--
-- The batch's rows are locked in id order, as a batch of delivery reports locks the campaigns
-- it counts on (LockReportedCampaigns): picked without a lock, then locked sorted, with the
-- status (what the campaigns' writers change) checked again on the locked rows.
DELETE FROM campaigns WHERE id IN (
    SELECT l.id FROM campaigns l
    WHERE l.id IN (
        SELECT c.id FROM campaigns c
        WHERE c.workspace_id = @workspace_id AND c.created_at <= @cutoff
          AND (NOT @by_ids::bool OR c.id = ANY(@ids::uuid[]))
          AND (@status::text = '' OR c.status = @status::text)
          AND c.status = ANY(@statuses::text[])
        LIMIT @max_rows)
      AND l.workspace_id = @workspace_id
      AND (@status::text = '' OR l.status = @status::text)
      AND l.status = ANY(@statuses::text[])
    ORDER BY l.id
    FOR UPDATE OF l);

-- name: BulkCancelCampaigns :execrows
-- Locked in id order, as BulkDeleteCampaigns.
UPDATE campaigns SET status = 'cancelled', cancelled_at = now(), paused_reason = NULL, updated_at = now() WHERE id IN (
    SELECT l.id FROM campaigns l
    WHERE l.id IN (
        SELECT c.id FROM campaigns c
        WHERE c.workspace_id = @workspace_id AND c.created_at <= @cutoff
          AND (NOT @by_ids::bool OR c.id = ANY(@ids::uuid[]))
          AND (@status::text = '' OR c.status = @status::text)
          AND c.status = ANY(@statuses::text[])
        LIMIT @max_rows)
      AND l.workspace_id = @workspace_id
      AND (@status::text = '' OR l.status = @status::text)
      AND l.status = ANY(@statuses::text[])
    ORDER BY l.id
    FOR UPDATE OF l);
