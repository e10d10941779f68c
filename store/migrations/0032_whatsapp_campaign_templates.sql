-- +goose Up
-- A campaign on WhatsApp (msgapp_1) names the approved template it sends to people outside
-- their customer-service window: {"name", "language", "parameters"} (package campaigns).
ALTER TABLE campaigns ADD COLUMN template jsonb;

-- +goose Down
ALTER TABLE campaigns DROP COLUMN template;
