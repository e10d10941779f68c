package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
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

// CompleteIdempotencyKey records the response of the key's request in the turn's
// transaction, so the replay record and the turn commit together. Requests waiting for the
// key hear of it after the commit (IdempotencyChannel).
func (t *Tx) CompleteIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key, responseID string) error {
	if err := t.sql.CompleteIdempotencyKey(ctx, t.db, dbsqlc.CompleteIdempotencyKeyParams{WorkspaceID: workspaceID, Key: key, ResponseShortID: &responseID}); err != nil {
		return err
	}
	t.keyNotices = append(t.keyNotices, IdempotencyToken(workspaceID, key))
	return nil
}

// ReleaseIdempotencyKey forgets a claim whose request failed, so a retry runs again; requests
// waiting for the key hear of it (IdempotencyChannel) and one of them takes it.
func (q *queries) ReleaseIdempotencyKey(ctx context.Context, workspaceID uuid.UUID, key string) error {
	if err := q.sql.ReleaseIdempotencyKey(ctx, q.db, dbsqlc.ReleaseIdempotencyKeyParams{WorkspaceID: workspaceID, Key: key}); err != nil {
		return err
	}
	return q.sql.Announce(ctx, q.db, dbsqlc.AnnounceParams{Channel: IdempotencyChannel, Payloads: []string{IdempotencyToken(workspaceID, key)}})
}

// IdempotencyChannel is the PostgreSQL NOTIFY channel on which an Idempotency-Key's
// completion or release is announced, so that the requests waiting for it look again at
// once rather than poll. The payload is IdempotencyToken: the key itself, chosen by the
// client, is never sent.
const IdempotencyChannel = "sb_idempotency"

// IdempotencyToken names a workspace's key in announcements: a hash, short and of fixed
// length whatever the key.
func IdempotencyToken(workspaceID uuid.UUID, key string) string {
	h := sha256.New()
	h.Write(workspaceID[:])
	h.Write([]byte(key))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// DeleteExpiredIdempotencyKeys removes keys past their retention.
func (q *queries) DeleteExpiredIdempotencyKeys(ctx context.Context) (int64, error) {
	return q.sql.DeleteExpiredIdempotencyKeys(ctx, q.db)
}
