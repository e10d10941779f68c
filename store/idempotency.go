package store

import (
	"bytes"
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/gen/dbsqlc"
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
func (q *queries) ClaimIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key string, sum []byte, lock, retention time.Duration) (Claim, error) {
	var c Claim
	err := q.inTx(ctx, func(q *queries) error {
		n, err := q.sql.ClaimIdempotencyKey(ctx, q.db, dbsqlc.ClaimIdempotencyKeyParams{WorkspaceID: workspaceID, Key: key,
			RequestSHA256: sum, LockFor: lock.String(), Retention: retention.String()})
		if err != nil || n == 1 {
			c.Owned = n == 1
			return err
		}
		held, err := q.sql.IdempotencyKey(ctx, q.db, dbsqlc.IdempotencyKeyParams{WorkspaceID: workspaceID, Key: key})
		if err != nil {
			return err
		}
		c.Mismatch = !bytes.Equal(held.RequestSHA256, sum)
		if held.ResponseShortID != nil {
			c.ResponseID = *held.ResponseShortID
		}
		return nil
	})
	return c, err
}

// CompleteIdempotencyKey records the response of the key's request; run it in the turn's
// transaction, so the replay record and the turn commit together.
func (q *queries) CompleteIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key, responseID string) error {
	return q.sql.CompleteIdempotencyKey(ctx, q.db, dbsqlc.CompleteIdempotencyKeyParams{WorkspaceID: workspaceID, Key: key, ResponseShortID: &responseID})
}

// ReleaseIdempotencyKey forgets a claim whose request failed, so a retry runs again.
func (q *queries) ReleaseIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key string) error {
	return q.sql.ReleaseIdempotencyKey(ctx, q.db, dbsqlc.ReleaseIdempotencyKeyParams{WorkspaceID: workspaceID, Key: key})
}

// DeleteExpiredIdempotencyKeys removes keys past their retention.
func (q *queries) DeleteExpiredIdempotencyKeys(ctx context.Context) (int64, error) {
	return q.sql.DeleteExpiredIdempotencyKeys(ctx, q.db)
}
