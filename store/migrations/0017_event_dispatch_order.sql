-- +goose Up
-- The relay claims the oldest undispatched events (ORDER BY created_at LIMIT n FOR UPDATE SKIP
-- LOCKED). Without an index that sorted the whole queue on every claim: under load (write-behind
-- metering lets ephemeral turns add ~4,000 events/s on the benchmark machine) the queue grew to
-- hundreds of thousands of rows, one claim took 25 s, and it held a pool connection the turns
-- needed. With the index a claim reads the n oldest rows.
CREATE INDEX event_dispatch_created_idx ON event_dispatch (created_at);
