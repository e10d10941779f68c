-- +goose Up
-- The group commit's batch (and the write-behind flush) now travels to PostgreSQL in one round
-- trip, with COMMIT (SettleWorkspace; docs/benchmarks.md, issue 17, thirteenth pass): while
-- the workspace's row is locked, from the settlement's UPDATE to COMMIT, nothing waits on a
-- round trip to the Switchboard process and back, which was time every other batch of the
-- workspace waited.
-- Two things had to move into the database for that.

-- format_usd writes an amount of nano-USD as money.FormatUSD does (at least two decimals, no
-- trailing zeros past them: 0.00006375, 12.50, -3.00). The settlement writes the balance into
-- its spend.recorded envelopes with it: the balance is known only once the lock is taken.
-- TestFormatUSDIsMoneyFormatUSD holds the two to the same text.
-- +goose StatementBegin
-- One expression, neither STRICT nor with a FROM, so that PostgreSQL inlines it into the
-- statement that calls it instead of running it as a query of its own per event.
CREATE FUNCTION format_usd(nano bigint) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN nano < 0 THEN '-' ELSE '' END || (abs(nano) / 1000000000)::text || '.' ||
           rpad(rtrim(lpad((abs(nano) % 1000000000)::text, 9, '0'), '0'),
                greatest(2, length(rtrim(lpad((abs(nano) % 1000000000)::text, 9, '0'), '0'))), '0')
$$;
-- +goose StatementEnd

-- raise_not_found fails the statement that calls it with no_data_found (P0002; the store reads
-- it as a NotFoundError of what). A statement that travels with COMMIT must fail in the
-- database for its transaction to roll back: a check of its result made by the server comes
-- after the commit. SettleWorkspace calls it for a workspace that is gone, AppendMessageRows
-- for a conversation that is.
-- +goose StatementBegin
CREATE FUNCTION raise_not_found(what text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% not found', what USING ERRCODE = 'no_data_found', DETAIL = what;
END
$$;
-- +goose StatementEnd
