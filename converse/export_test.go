package converse

import "github.com/google/uuid"

// KeptHistory is the range of seqs the runtime keeps of a conversation's history window
// (historyCache), by the ref a request names it with: 0, 0 when none.
func (s *Service) KeptHistory(ws uuid.UUID, ref string) (from, to int) {
	return s.history.known(ws, ref)
}

// StaleHistoryReads counts the reads whose kept copy of the window did not hold (an elided
// row without a copy of its seq and version), which the runtime then read again in full.
func (s *Service) StaleHistoryReads() int64 { return s.history.stale.Load() }
