package store

import (
	"github.com/alexedwards/scs/pgxstore"
	"github.com/alexedwards/scs/v2"
)

// SessionStore is where dashboard sessions live: the sessions table, through scs's pgxstore,
// so every replica sees a session begin and end at once. It runs no cleanup goroutine:
// expired rows are removed by DeleteExpiredSessions (at each sign-in).
func (s *Store) SessionStore() scs.Store { return pgxstore.NewWithCleanupInterval(s.pool, 0) }
