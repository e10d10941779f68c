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

-- name: SetMonthlyCap :one
-- SetMonthlyCap sets (or with NULL, clears) the workspace's monthly spend cap.
UPDATE workspaces SET monthly_cap_nano_usd = sqlc.narg('cap_nano_usd'), updated_at = now()
WHERE name = @name
RETURNING *;

-- name: SetMonthlyCapByID :one
UPDATE workspaces SET monthly_cap_nano_usd = sqlc.narg('cap_nano_usd'), updated_at = now()
WHERE id = @id
RETURNING *;

-- name: WorkspaceByID :one
SELECT * FROM workspaces WHERE id = @id;
