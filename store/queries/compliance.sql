-- name: AcceptCompliance :one
-- AcceptCompliance records an acceptance of a version; accepting a version again keeps the
-- first acceptance.
INSERT INTO compliance_acceptances (workspace_id, version, user_id, user_email, user_role)
VALUES (@workspace_id, @version, @user_id, @user_email, @user_role)
ON CONFLICT (workspace_id, version) DO UPDATE SET version = excluded.version
RETURNING *;

-- name: ComplianceAcceptance :one
SELECT * FROM compliance_acceptances WHERE workspace_id = @workspace_id AND version = @version;
