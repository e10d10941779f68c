package converse

import "github.com/google/uuid"

// KeptHistory is the range of seqs the runtime keeps of a conversation's history window
// (historyCache), by the ref a request names it with: 0, 0 when none.
func (s *Service) KeptHistory(ws uuid.UUID, ref string) (from, to int) {
	return s.history.known(ws, ref)
}
