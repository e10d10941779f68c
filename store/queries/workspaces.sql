-- name: CreateWorkspace :one
INSERT INTO workspaces (name, balance_nano_usd) VALUES (@name, @balance_nano_usd)
RETURNING *;

-- name: WorkspaceByName :one
SELECT * FROM workspaces WHERE name = @name;

-- name: AddCredit :one
UPDATE workspaces SET balance_nano_usd = balance_nano_usd + @nano_usd, updated_at = now()
WHERE name = @name
RETURNING *;

-- name: SetWorkspaceStatus :one
UPDATE workspaces SET status = @status, updated_at = now()
WHERE name = @name
RETURNING *;

-- name: EnsureWorkspace :one
INSERT INTO workspaces (name, balance_nano_usd) VALUES (@name, @balance_nano_usd)
ON CONFLICT (name) DO UPDATE SET name = excluded.name
RETURNING id;
