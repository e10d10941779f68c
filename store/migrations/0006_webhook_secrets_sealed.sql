-- +goose Up
-- Webhook signing secrets are kept encrypted (AES-256-GCM under SECRETS_KEY, see secrets/):
-- secret_ciphertext and the id of the key that sealed it. The plaintext column is renamed
-- secret_plaintext and only holds the secrets of endpoints created before this migration,
-- until `switchboard serve` (at start, with SECRETS_KEY set) or `switchboard secrets
-- rotate` seals them and clears it; a migration cannot, it has no key. Every row holds
-- exactly one of the two forms.
ALTER TABLE webhook_endpoints RENAME COLUMN secret TO secret_plaintext;
ALTER TABLE webhook_endpoints
    ALTER COLUMN secret_plaintext DROP NOT NULL,
    ADD COLUMN secret_ciphertext bytea,
    ADD COLUMN secret_key_id text,
    ADD CONSTRAINT webhook_endpoints_secret_one_form CHECK (
        (secret_plaintext IS NULL AND secret_ciphertext IS NOT NULL AND secret_key_id IS NOT NULL)
        OR (secret_plaintext IS NOT NULL AND secret_ciphertext IS NULL AND secret_key_id IS NULL));
