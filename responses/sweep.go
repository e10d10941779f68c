package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"switchboard/gen/v1api"
	"switchboard/store"
)

// SweepInterval is how often RunSweeper looks for stuck responses and expired keys: often
// enough that a stuck response is failed soon after its TTL, at most once a minute.
func (s *Service) SweepInterval() time.Duration {
	return min(max(s.cfg.TTL/4, 100*time.Millisecond), time.Minute)
}

// RunSweeper fails stuck background responses and forgets expired idempotency keys: at once
// (a crash may have left some behind), then every SweepInterval, until ctx ends.
func (s *Service) RunSweeper(ctx context.Context) {
	for {
		s.sweepOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.SweepInterval()):
		}
	}
}

func (s *Service) sweepOnce(ctx context.Context) {
	if n, err := s.SweepStuck(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("sweeping stuck responses", slog.String("error", err.Error()))
	} else if n > 0 {
		s.log.Warn("failed stuck background responses", slog.Int("count", n))
	}
	if _, err := s.store.DeleteExpiredIdempotencyKeys(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("sweeping idempotency keys", slog.String("error", err.Error()))
	}
}

// SweepStuck fails the background responses unfinished after the TTL, storing the error
// and announcing each, in one transaction. Replicas may sweep at once: each response is
// failed (and announced) by exactly one of them.
func (s *Service) SweepStuck(ctx context.Context) (int, error) {
	// server_error: the reference API's closed list of codes has none for a time-out.
	code := "server_error"
	errBody, err := json.Marshal(v1api.Error{Type: "server_error", Code: &code,
		Message: "The background response did not finish within its time-to-live (" + s.cfg.TTL.String() + ") (response_timed_out)."})
	if err != nil {
		return 0, err
	}
	var n int
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		stuck, err := tx.FailStuckResponses(ctx, s.cfg.TTL, errBody)
		if err != nil {
			return err
		}
		n = len(stuck)
		return announceFailed(ctx, tx, stuck)
	})
	return n, err
}

// announceFailed appends a failed event per stuck response, workspace by workspace. The
// workspace rows are locked in one order, so that concurrent sweeps cannot deadlock.
func announceFailed(ctx context.Context, tx *store.Tx, stuck []store.Stuck) error {
	byWorkspace := map[uuid.UUID][]store.NewEvent{}
	var order []uuid.UUID
	for _, s := range stuck {
		if byWorkspace[s.WorkspaceID] == nil {
			order = append(order, s.WorkspaceID)
		}
		byWorkspace[s.WorkspaceID] = append(byWorkspace[s.WorkspaceID], responseEvent(s.ShortID, s.Conversation, "failed"))
	}
	slices.SortFunc(order, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	for _, ws := range order {
		if _, err := tx.AppendEvents(ctx, ws, byWorkspace[ws]); err != nil {
			return err
		}
	}
	return nil
}
