-- +goose Up
-- The inbound messages whose reply job is not inserted yet (channels' inbox). An SMS
-- webhook stores its message and its row here in one autocommit statement
-- (RecordInboundQueued): one round trip and one WAL flush before the carrier is answered,
-- instead of a transaction of four (BEGIN, the message, River's job, COMMIT). The replica that
-- took the webhook then moves the rows of concurrent messages to River in one transaction
-- (TakeInbox); a row left behind by a replica that died is taken by any replica's sweep
-- (TakeStaleInbox). Taking a row deletes it in the transaction that inserts the job, so
-- each message gets one job. Rows live for milliseconds: the table stays a few pages.
CREATE TABLE channel_inbox (
    message_id uuid PRIMARY KEY REFERENCES channel_messages (id) ON DELETE CASCADE,
    queued_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE channel_inbox;
