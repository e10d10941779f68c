package responses

import "time"

// OnClaim sets a hook called before each claim of an Idempotency-Key, and how often a
// waiting request looks again unasked.
func (s *Service) OnClaim(hook func(), recheck time.Duration) {
	s.onClaim, s.idempotencyRecheck = hook, recheck
}
