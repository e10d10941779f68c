package store

import "github.com/google/uuid"

// newRowID is the primary key of a conversation, a response or a ledger row: a UUIDv7 (RFC
// 9562), whose first 48 bits are the time in milliseconds, rather than the random v4 of
// gen_random_uuid(). These tables grow by a few rows on every turn, and a random key lands
// each insert on a random leaf of the primary key's B-tree (and of messages', whose key
// begins with the conversation id), and so does the reference checks' lookup after it: once
// the index outgrows the cache, every turn reads and dirties pages all over it, and each
// page first dirtied after a checkpoint is written whole to the WAL. Time-ordered keys put
// a batch's rows side by side at the right edge. The remaining 74 bits stay random, so ids
// do not collide across replicas and are not guessable from one another; the public short
// ids (`resp_…`, `mc-…`) stay wholly random, as the design requires.
func newRowID() uuid.UUID {
	return uuid.Must(uuid.NewV7()) // fails only if the system's random source does
}
