-- name: InsertRecording :one
INSERT INTO recordings (workspace_id, kind, name, format, duration_ms, size_bytes, audio)
VALUES (@workspace_id, @kind, @name, @format, @duration_ms, @size_bytes, @audio)
RETURNING id, workspace_id, kind, name, format, duration_ms, size_bytes, media_token, created_at;

-- name: RecordingByID :one
SELECT id, workspace_id, kind, name, format, duration_ms, size_bytes, media_token, created_at
FROM recordings WHERE workspace_id = @workspace_id AND id = @id;

-- name: ListRecordings :many
SELECT id, workspace_id, kind, name, format, duration_ms, size_bytes, media_token, created_at
FROM recordings WHERE workspace_id = @workspace_id
ORDER BY created_at DESC, id;

-- name: RecordingMedia :one
-- RecordingMedia serves a recording to the carrier: the token is the credential of the URL.
SELECT format, audio FROM recordings WHERE media_token = @media_token AND audio IS NOT NULL;

-- name: RecordingUsers :many
-- RecordingUsers are the agents that use the recording as their disclosure.
SELECT name FROM agents WHERE workspace_id = @workspace_id AND disclosure_recording_id = @id ORDER BY name;

-- name: RecordingCampaigns :many
-- RecordingCampaigns are the campaigns not over (completed, cancelled) that leave the
-- recording as their voicemail drop.
SELECT name FROM campaigns WHERE workspace_id = @workspace_id AND voicemail_recording_id = @id
  AND status NOT IN ('completed', 'cancelled') ORDER BY name;

-- name: DeleteRecording :execrows
DELETE FROM recordings WHERE workspace_id = @workspace_id AND id = @id;
