-- +goose Up
-- Webhook signing secrets are kept encrypted (AES-256-GCM under SECRETS_KEY, see secrets/):
-- secret_ciphertext and the id of the key that sealed it. The column secret keeps its name
-- (raw SQL of older tools and tests still inserts there) but only holds, in plaintext, the
-- secrets of endpoints created before this migration, until `switchboard serve` (at start,
-- with SECRETS_KEY set) or `switchboard secrets rotate` seals them and clears it; a
-- migration cannot, it has no key. Every row holds exactly one of the two forms.
ALTER TABLE webhook_endpoints
    ALTER COLUMN secret DROP NOT NULL,
    ADD COLUMN secret_ciphertext bytea,
    ADD COLUMN secret_key_id text,
    ADD CONSTRAINT webhook_endpoints_secret_one_form CHECK (
        (secret IS NULL AND secret_ciphertext IS NOT NULL AND secret_key_id IS NOT NULL)
        OR (secret IS NOT NULL AND secret_ciphertext IS NULL AND secret_key_id IS NULL));
