package store

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Claim is the state of an idempotency key after a request tried to claim it.
type Claim struct {
	Owned      bool   // this request holds the key and must run the turn
	Mismatch   bool   // the key was used with another body
	ResponseID string // set when the first request finished: replay this response
}

// ClaimIdempotencyKey claims key for a request whose canonical body hashes to sum. The
// request owns the key when it is new, expired, or held by a request that died (its lock
// ran out). Otherwise the claim says whether the bodies differ and, once the holder
// finished, which response to replay.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key string, sum []byte, lock, retention time.Duration) (Claim, error) {
	var c Claim
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`INSERT INTO idempotency_keys (workspace_id, key, request_sha256, locked_until, expires_at)
			 VALUES ($1, $2, $3, now() + $4::interval, now() + $5::interval)
			 ON CONFLICT (workspace_id, key) DO UPDATE SET
				request_sha256 = excluded.request_sha256, response_short_id = NULL,
				locked_until = excluded.locked_until, created_at = now(), expires_at = excluded.expires_at
			 WHERE idempotency_keys.expires_at < now()
			    OR (idempotency_keys.response_short_id IS NULL AND idempotency_keys.locked_until < now()
			        AND idempotency_keys.request_sha256 = excluded.request_sha256)`,
			workspaceID, key, sum, lock.String(), retention.String())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			c.Owned = true
			return nil
		}
		var stored []byte
		var resp *string
		if err := tx.QueryRow(ctx,
			`SELECT request_sha256, response_short_id FROM idempotency_keys WHERE workspace_id = $1 AND key = $2`,
			workspaceID, key).Scan(&stored, &resp); err != nil {
			return err
		}
		c.Mismatch = !bytes.Equal(stored, sum)
		if resp != nil {
			c.ResponseID = *resp
		}
		return nil
	})
	return c, err
}

// CompleteIdempotencyKey records the response of the key's request, in the turn's
// transaction, so the replay record and the turn commit together.
func (t *Tx) CompleteIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key, responseID string) error {
	_, err := t.tx.Exec(ctx,
		`UPDATE idempotency_keys SET response_short_id = $3, locked_until = NULL WHERE workspace_id = $1 AND key = $2`,
		workspaceID, key, responseID)
	return err
}

// ReleaseIdempotencyKey forgets a claim whose request failed, so a retry runs again.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key string) error {
	_, err := s.pool.Exec(ctx,
		`DELETE FROM idempotency_keys WHERE workspace_id = $1 AND key = $2 AND response_short_id IS NULL`, workspaceID, key)
	return err
}

// DeleteExpiredIdempotencyKeys removes keys past their retention.
func (s *Store) DeleteExpiredIdempotencyKeys(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < now()`)
	return tag.RowsAffected(), err
}
