-- +goose Up
-- Attempts recorded before failures were classified hold raw dial errors, with addresses and
-- ports; the attempt log must not show them (it would serve as a port scanner). Reduce each
-- to the class the deliverer records now (events.FailureClass).
UPDATE webhook_attempts SET error = CASE
    WHEN error LIKE 'the receiver answered %' THEN 'http_status'
    WHEN error LIKE '%address not allowed%' THEN 'blocked_address'
    WHEN error LIKE '%no such host%' OR error LIKE '%lookup %' THEN 'dns_error'
    WHEN error LIKE '%connection refused%' THEN 'connection_refused'
    WHEN error LIKE '%x509:%' OR error LIKE '%tls:%' THEN 'tls_error'
    WHEN error ILIKE '%timeout%' OR error LIKE '%deadline exceeded%' THEN 'timeout'
    ELSE 'connection_error' END
WHERE error IS NOT NULL
  AND error NOT IN ('http_status', 'blocked_address', 'dns_error', 'connection_refused', 'tls_error', 'timeout', 'connection_error');
