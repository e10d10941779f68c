-- name: CreateConversations :many
-- CreateConversations opens several conversations at once (the group commit of turns), each
-- with the seqs 1..message_seq of its first messages already reserved.
INSERT INTO conversations (workspace_id, short_id, channel, message_seq)
SELECT unnest(@workspace_ids::uuid[]), unnest(@short_ids::text[]), unnest(@channels::text[]), unnest(@message_seqs::int[])
RETURNING id, short_id, created_at;
