package store

// RoundTrips is how many batches a pipelined transaction has sent so far (Store.Pipelined).
func RoundTrips(t *Tx) int { return t.db.(*pipe).sent }
