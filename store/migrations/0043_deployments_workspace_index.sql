-- +goose Up
-- The bulk tools select a workspace's deployments by workspace and creation time
-- (BulkCountDeployments, BulkSampleDeployments, BulkDeleteDeployments); with no index
-- leading with workspace_id they read every workspace's deployments
-- (TestEveryQueryFindsItsRowsByAnIndex). Deployments are a few per agent, so the build runs
-- in the migration's transaction.
CREATE INDEX deployments_workspace_idx ON deployments (workspace_id, created_at);
