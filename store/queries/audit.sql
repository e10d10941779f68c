-- name: InsertAuditEntry :exec
INSERT INTO audit_log (workspace_id, actor_type, actor_id, actor_label, actor_role, action, target_type, target_id, summary)
VALUES (@workspace_id, @actor_type, sqlc.narg(actor_id), @actor_label, @actor_role, @action, @target_type, @target_id, @summary);

-- name: ListAuditEntries :many
-- ListAuditEntries filters by each argument that is given (NULL: any), newest first, keyset
-- paginated below the seq of the previous page's last entry.
SELECT * FROM audit_log a
WHERE a.workspace_id = @workspace_id
  AND (sqlc.narg(action)::text IS NULL OR a.action = sqlc.narg(action)::text)
  AND (sqlc.narg(actor_id)::uuid IS NULL OR a.actor_id = sqlc.narg(actor_id)::uuid)
  AND (sqlc.narg(actor_type)::text IS NULL OR a.actor_type = sqlc.narg(actor_type)::text)
  AND (sqlc.narg(target_id)::text IS NULL OR a.target_id = sqlc.narg(target_id)::text)
  AND (sqlc.narg(since)::timestamptz IS NULL OR a.created_at >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL OR a.created_at < sqlc.narg(until)::timestamptz)
  AND (sqlc.narg(before_seq)::bigint IS NULL OR a.seq < sqlc.narg(before_seq)::bigint)
ORDER BY a.seq DESC
LIMIT @max_rows;

-- name: AuditEntrySeq :one
SELECT seq FROM audit_log WHERE workspace_id = @workspace_id AND id = @id;
