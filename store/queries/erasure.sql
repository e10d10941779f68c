-- Erasure and retention (package erasure). Each statement changes only rows that still hold
-- something to erase, so an erasure run twice counts zero the second time.

-- name: ContactConversations :many
-- ContactConversations are the conversations holding a contact's words: those it is the
-- contact of, and those its campaign sends started. Their rows are locked (in id order, as
-- the group commit's append locks them) until the erasure commits: a turn appending to one of
-- them either committed before, and its messages are blanked with the others, or waits and
-- appends after the erasure. Without the lock, a turn committing during the erasure kept the
-- words it had been acknowledged for, after the erasure said they were gone.
SELECT c.id, c.short_id FROM conversations c
WHERE c.workspace_id = @workspace_id AND (c.contact_id = @contact_id OR c.id IN (
    SELECT s.conversation_id FROM campaign_sends s WHERE s.workspace_id = @workspace_id AND s.contact_id = @contact_id))
ORDER BY c.id
FOR UPDATE OF c;

-- name: ContactForErasure :one
SELECT id, erased_at FROM contacts WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: EraseContactFields :execrows
UPDATE contacts SET name = NULL, email = NULL, phone = NULL, tags = '{}', timezone = NULL, erased_at = now(), updated_at = now(),
    deleted_at = coalesce(deleted_at, now())
WHERE workspace_id = @workspace_id AND id = @id AND erased_at IS NULL;

-- name: EraseContactListMemberships :execrows
DELETE FROM contact_list_members m USING contact_lists l
WHERE m.contact_id = @contact_id AND l.id = m.list_id AND l.workspace_id = @workspace_id;

-- name: BlankMessages :execrows
UPDATE messages SET content = '', tool_calls = NULL, tool_results = NULL
WHERE workspace_id = @workspace_id AND conversation_id = ANY(@conversation_ids::uuid[])
  AND (content <> '' OR tool_calls IS NOT NULL OR tool_results IS NOT NULL);

-- name: BlankChannelMessages :execrows
UPDATE channel_messages SET body = '', remote = '', updated_at = now()
WHERE workspace_id = @workspace_id AND conversation_id = ANY(@conversation_ids::uuid[]) AND (body <> '' OR remote <> '');

-- name: DeleteConversationNotes :execrows
DELETE FROM conversation_notes WHERE workspace_id = @workspace_id AND conversation_id = ANY(@conversation_ids::uuid[]);

-- name: BlankConversationSummaries :execrows
UPDATE conversations SET escalation_summary = NULL
WHERE workspace_id = @workspace_id AND id = ANY(@conversation_ids::uuid[]) AND escalation_summary IS NOT NULL;

-- name: BlankCampaignSends :execrows
UPDATE campaign_sends SET reason = NULL, provider_message_id = NULL, updated_at = now()
WHERE workspace_id = @workspace_id AND contact_id = @contact_id AND (reason IS NOT NULL OR provider_message_id IS NOT NULL);

-- name: BlankLedgerConversations :execrows
-- Metering rows stay (the books must add up); only their link to the conversation goes.
UPDATE ledger SET conversation_id = NULL
WHERE workspace_id = @workspace_id AND conversation_id = ANY(@conversation_ids::uuid[]);

-- name: TombstoneEvents :execrows
-- TombstoneEvents replaces the data of the events that mention any of needles (ids) with
-- {"erased":true}, keeping the envelope's head (id, type, workspace, time) and the event's
-- cursor (seq), so feeds and redeliveries stay gapless.
UPDATE events SET envelope = left(envelope, position('"data":' IN envelope) + 6) || '{"erased":true}}'
WHERE workspace_id = @workspace_id AND envelope LIKE ANY(@patterns::text[])
  AND envelope NOT LIKE '%"data":{"erased":true}}';

-- name: TombstoneMentionedEvents :execrows
-- TombstoneMentionedEvents tombstones the events at or before through_seq that
-- event_mentions says mention any of mentions (as TombstoneEvents does by pattern).
UPDATE events e SET envelope = left(e.envelope, position('"data":' IN e.envelope) + 6) || '{"erased":true}}'
FROM (SELECT DISTINCT m.seq FROM event_mentions m WHERE m.workspace_id = @workspace_id AND m.mention = ANY(@mentions::text[])) AS found
WHERE e.workspace_id = @workspace_id AND e.seq = found.seq AND e.seq <= @through_seq
  AND e.envelope NOT LIKE '%"data":{"erased":true}}';

-- name: TombstoneEventsAfter :execrows
-- TombstoneEventsAfter is TombstoneEvents over the events after after_seq only: those whose
-- mentions are not recorded yet.
UPDATE events SET envelope = left(envelope, position('"data":' IN envelope) + 6) || '{"erased":true}}'
WHERE workspace_id = @workspace_id AND seq > @after_seq AND envelope LIKE ANY(@patterns::text[])
  AND envelope NOT LIKE '%"data":{"erased":true}}';

-- name: ForgetMentions :exec
-- The mentions of ids whose events are tombstoned: their envelopes no longer name them.
DELETE FROM event_mentions WHERE workspace_id = @workspace_id AND mention = ANY(@mentions::text[]);

-- name: MentionsIndexedThrough :one
-- How far ws's events have their mentions recorded (0: none).
SELECT coalesce((SELECT through_seq FROM event_mentions_indexed WHERE workspace_id = @workspace_id), 0)::bigint;

-- name: LockMentionsIndex :one
-- LockMentionsIndex takes ws's place in recording mentions for this transaction (one
-- recorder at a time), creating it at 0.
INSERT INTO event_mentions_indexed (workspace_id, through_seq) VALUES (@workspace_id, 0)
ON CONFLICT (workspace_id) DO UPDATE SET through_seq = event_mentions_indexed.through_seq
RETURNING through_seq;

-- name: EventsToIndex :many
SELECT seq, envelope FROM events WHERE workspace_id = @workspace_id AND seq > @after_seq ORDER BY seq LIMIT @max_rows;

-- name: InsertEventMentions :exec
-- InsertEventMentions records the candidate ids found in events' envelopes that are the
-- workspace's own: short ids of its conversations, UUIDs of its conversations and contacts.
-- (Set-returning functions in a select list advance in step, so the arrays zip.)
INSERT INTO event_mentions (workspace_id, mention, seq)
SELECT @workspace_id::uuid, s.mention, s.seq
FROM (SELECT unnest(@short_ids::text[]) AS mention, unnest(@short_seqs::bigint[]) AS seq) AS s
WHERE EXISTS (SELECT 1 FROM conversations c WHERE c.short_id = s.mention AND c.workspace_id = @workspace_id::uuid)
UNION ALL
SELECT @workspace_id::uuid, u.mention::text, u.seq
FROM (SELECT unnest(@uuids::uuid[]) AS mention, unnest(@uuid_seqs::bigint[]) AS seq) AS u
WHERE EXISTS (SELECT 1 FROM conversations c WHERE c.id = u.mention AND c.workspace_id = @workspace_id::uuid)
   OR EXISTS (SELECT 1 FROM contacts k WHERE k.id = u.mention AND k.workspace_id = @workspace_id::uuid)
ON CONFLICT DO NOTHING;

-- name: SetMentionsIndexed :exec
UPDATE event_mentions_indexed SET through_seq = @through_seq WHERE workspace_id = @workspace_id;

-- name: WorkspaceRetention :one
SELECT retention_days FROM workspaces WHERE id = @id;

-- name: SetWorkspaceRetention :one
UPDATE workspaces SET retention_days = sqlc.narg(retention_days) WHERE id = @id RETURNING retention_days;

-- name: RetentionWorkspaces :many
-- RetentionWorkspaces are the workspaces whose conversations can expire: those with a
-- retention period and those with an agent whose blueprint sets its own
-- (agent.retention_days, which wins for its conversations), each with the shortest period
-- that applies in it: no conversation more recently active can have expired. The retention
-- job reads it once a run, so it reads every workspace.
SELECT w.id, w.retention_days,
    least(w.retention_days, min((a.blueprint -> 'agent' ->> 'retention_days')::int))::int AS shortest_days
FROM workspaces w
LEFT JOIN agents a ON a.workspace_id = w.id AND a.blueprint -> 'agent' ->> 'retention_days' IS NOT NULL
GROUP BY w.id
HAVING least(w.retention_days, min((a.blueprint -> 'agent' ->> 'retention_days')::int)) IS NOT NULL
ORDER BY w.id;

-- name: ExpiredConversations :many
-- ExpiredConversations is a batch of a workspace's conversations past their retention (the
-- agent's where it sets one, else the workspace's, workspace_days), the most recently active
-- first, among those last active at or before `before`: the job's place in the workspace,
-- the oldest activity of its previous batch, so that a batch reads only the index range
-- (conversations_activity_idx) it has not read yet, and the conversations kept by a longer
-- agent period are passed over once a run, not once a batch. The batch's rows are locked
-- until its transaction deletes them, and a conversation a turn is writing to (its lock
-- held, FOR NO KEY UPDATE or the KEY SHARE of a message) is skipped, not waited for: without
-- the lock, a turn that committed between this read and the DELETE would have its
-- just-acknowledged message deleted with a conversation no longer idle, and its event left
-- untombstoned; a locked row updated since this statement's snapshot is read again and
-- dropped if it is no longer expired. The next run finds what was skipped, if it is still idle.
SELECT c.id, c.short_id, c.updated_at FROM conversations c
LEFT JOIN agents a ON a.id = c.agent_id
WHERE c.workspace_id = @workspace_id
  AND c.updated_at < now() - make_interval(days => @shortest_days::int)
  AND c.updated_at <= @before
  AND c.updated_at < now() - make_interval(days => coalesce((a.blueprint -> 'agent' ->> 'retention_days')::int, sqlc.narg(workspace_days)::int))
ORDER BY c.updated_at DESC
LIMIT @max_rows
FOR UPDATE OF c SKIP LOCKED;

-- name: DeleteChannelMessagesOf :execrows
DELETE FROM channel_messages WHERE workspace_id = @workspace_id AND conversation_id = ANY(@conversation_ids::uuid[]);

-- name: DeleteConversations :execrows
-- Their messages, responses and notes go with them (ON DELETE CASCADE); ledger rows and
-- campaign sends lose the link (ON DELETE SET NULL).
DELETE FROM conversations WHERE workspace_id = @workspace_id AND id = ANY(@conversation_ids::uuid[]);

-- name: DeleteExpiredUploads :execrows
-- A batch of uploads past the workspace's retention that no knowledge source reads (an
-- upload an agent's knowledge is built from stays while it is used).
DELETE FROM uploads WHERE id IN (
    SELECT u.id FROM uploads u JOIN workspaces w ON w.id = u.workspace_id
    WHERE w.retention_days IS NOT NULL AND u.created_at < now() - make_interval(days => w.retention_days)
      AND NOT EXISTS (SELECT 1 FROM knowledge_sources k WHERE k.upload_id = u.id)
    LIMIT @max_rows);
