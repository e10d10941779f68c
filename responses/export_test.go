package responses

import "time"

// OnClaim sets a hook called before each claim of an Idempotency-Key.
func (s *Service) OnClaim(hook func()) { s.onClaim = hook }

// SetAfter replaces the clock a waiting Idempotency-Key retry waits by (time.After): it is
// asked for the wait's deadline (idempotencyWait) once, then for a re-check timer
// (IdempotencyRecheck) each time the retry found the key held and is about to wait.
func (s *Service) SetAfter(after func(time.Duration) <-chan time.Time) { s.after = after }

// IdempotencyWait and IdempotencyRecheck are the waits SetAfter's clock is asked for.
const (
	IdempotencyWait    = idempotencyWait
	IdempotencyRecheck = idempotencyRecheck
)
