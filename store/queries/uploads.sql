-- name: CreateUpload :one
INSERT INTO uploads (workspace_id, short_id, filename, content_type, bytes, sha256, content)
VALUES (@workspace_id, @short_id, @filename, @content_type, @bytes, @sha256, @content)
RETURNING id, workspace_id, short_id, filename, content_type, bytes, sha256, created_at;

-- name: UploadByShortID :one
SELECT id, workspace_id, short_id, filename, content_type, bytes, sha256, created_at FROM uploads
WHERE workspace_id = @workspace_id AND short_id = @short_id;

-- name: UploadNamed :one
-- UploadNamed is the newest upload of the workspace with that filename.
SELECT id, workspace_id, short_id, filename, content_type, bytes, sha256, created_at FROM uploads
WHERE workspace_id = @workspace_id AND filename = @filename
ORDER BY created_at DESC, id DESC LIMIT 1;

-- name: UploadContent :one
SELECT content FROM uploads WHERE workspace_id = @workspace_id AND id = @id;

-- name: UploadByID :one
SELECT id, workspace_id, short_id, filename, content_type, bytes, sha256, created_at FROM uploads
WHERE workspace_id = @workspace_id AND id = @id;
