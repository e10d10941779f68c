package store

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"switchboard/shortid"
	"switchboard/store/internal/dbsqlc"
)

// Which events mention which conversations and contacts (migration 0044). A tombstone used to
// match every event of the workspace against LIKE '%id%' patterns, two a conversation; events
// are never deleted, so a retention batch read the workspace's whole history at (events) ×
// (patterns): 115-170 µs an event for a batch of 200 conversations. The mentions are recorded
// off the request path, by the daily retention job, for the events its workspaces appended
// since its last run (17-21 µs an event, once); a tombstone looks them up to the recorded
// seq and matches only the events after it by pattern. Only the workspaces where something
// can expire are recorded: elsewhere the recording would cost more than the occasional
// contact erasure it saves (about 1 µs an event a pattern), and the tombstone is correct
// either way (nothing recorded: every event is matched by pattern).
//
// The recording is exact for the ids it records: a LIKE '%id%' match of a conversation's
// short id (mc- and 22 base62 characters) or of a UUID (36 lower-case characters) means the
// envelope holds that id at some offset, and mentionsIn looks at every offset of the data.

// mentionChunk is the events one transaction of the recorder reads.
const mentionChunk = 2000

// IndexEventMentions records the mentions of ws's events appended since the last run,
// mentionChunk events a transaction, and returns how many events it read.
func (s *Store) IndexEventMentions(ctx context.Context, ws uuid.UUID) (int, error) {
	total := 0
	for {
		n := 0
		err := s.InTx(ctx, func(tx *Tx) error {
			var err error
			n, err = tx.indexMentionChunk(ctx, ws)
			return err
		})
		total += n
		if err != nil || n < mentionChunk {
			return total, err
		}
	}
}

// indexMentionChunk records the mentions of the next chunk of ws's events, holding ws's
// place (one recorder at a time), and returns how many events it read.
func (tx *Tx) indexMentionChunk(ctx context.Context, ws uuid.UUID) (int, error) {
	after, err := tx.sql.LockMentionsIndex(ctx, tx.db, ws)
	if err != nil {
		return 0, err
	}
	events, err := tx.sql.EventsToIndex(ctx, tx.db, dbsqlc.EventsToIndexParams{WorkspaceID: ws, AfterSeq: after, MaxRows: mentionChunk})
	if err != nil || len(events) == 0 {
		return 0, err
	}
	p := dbsqlc.InsertEventMentionsParams{WorkspaceID: ws}
	for _, e := range events {
		shorts, ids := mentionsIn(envelopeData(e.Envelope))
		for _, m := range shorts {
			p.ShortIds, p.ShortSeqs = append(p.ShortIds, m), append(p.ShortSeqs, e.Seq)
		}
		for _, m := range ids {
			p.Uuids, p.UuidSeqs = append(p.Uuids, m), append(p.UuidSeqs, e.Seq)
		}
	}
	if err := tx.sql.InsertEventMentions(ctx, tx.db, p); err != nil {
		return 0, err
	}
	last := events[len(events)-1].Seq
	return len(events), tx.sql.SetMentionsIndexed(ctx, tx.db, dbsqlc.SetMentionsIndexedParams{WorkspaceID: ws, ThroughSeq: last})
}

// mentionsIn returns every conversation short id and every UUID written in envelope, at any
// offset (overlapping ones included), each once.
func mentionsIn(envelope string) (shorts []string, ids []uuid.UUID) {
	seen := map[string]bool{}
	for i := 0; i < len(envelope); i++ {
		if c := envelope[i]; c == 'm' {
			if end := i + len(shortid.Conversation) + shortid.Length; end <= len(envelope) && shortid.Has(envelope[i:end], shortid.Conversation) && !seen[envelope[i:end]] {
				seen[envelope[i:end]] = true
				shorts = append(shorts, envelope[i:end])
			}
		} else if isLowerHex(c) && i+36 <= len(envelope) && envelope[i+8] == '-' {
			if w := envelope[i : i+36]; isUUIDText(w) && !seen[w] {
				seen[w] = true
				ids = append(ids, uuid.MustParse(w))
			}
		}
	}
	return shorts, ids
}

// envelopeData is envelope from its data on: the head before it (the event's id, type,
// workspace and time) names no conversation or contact.
func envelopeData(envelope string) string {
	if i := strings.Index(envelope, `"data":`); i >= 0 {
		return envelope[i:]
	}
	return envelope
}

// isUUIDText reports whether w is a UUID as uuid.UUID.String writes it (lower case).
func isUUIDText(w string) bool {
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if w[i] != '-' {
				return false
			}
		default:
			if !isLowerHex(w[i]) {
				return false
			}
		}
	}
	return true
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// recordable reports whether the recorder finds id wherever an envelope writes it: a UUID
// in lower case or a conversation's short id of the usual form.
func recordable(id string) bool {
	return len(id) == 36 && isUUIDText(id) || shortid.Has(id, shortid.Conversation)
}

// tombstone replaces the data of ws's events that mention any of ids (UUIDs and short ids,
// as envelopes write them) with {"erased":true}, keeping each envelope's head and the event's
// cursor, so feeds and redeliveries stay gapless; it returns how many. Ids the recorder
// finds are looked up in the recorded mentions up to where the recording has reached, and
// matched by pattern in the events after it; any other id is matched in every event.
func (q *queries) tombstone(ctx context.Context, ws uuid.UUID, ids []string) (int64, error) {
	var found, other []string
	for _, id := range ids {
		if recordable(id) {
			found = append(found, id)
		} else {
			other = append(other, id)
		}
	}
	through, err := q.sql.MentionsIndexedThrough(ctx, q.db, ws)
	if err != nil {
		return 0, err
	}
	byMention, err := q.sql.TombstoneMentionedEvents(ctx, q.db, dbsqlc.TombstoneMentionedEventsParams{WorkspaceID: ws, ThroughSeq: through, Mentions: found})
	if err != nil {
		return 0, err
	}
	after, err := q.sql.TombstoneEventsAfter(ctx, q.db, dbsqlc.TombstoneEventsAfterParams{WorkspaceID: ws, AfterSeq: through, Patterns: likePatterns(found)})
	if err != nil {
		return 0, err
	}
	var anywhere int64
	if len(other) > 0 {
		if anywhere, err = q.sql.TombstoneEvents(ctx, q.db, dbsqlc.TombstoneEventsParams{WorkspaceID: ws, Patterns: likePatterns(other)}); err != nil {
			return 0, err
		}
	}
	return byMention + after + anywhere, q.sql.ForgetMentions(ctx, q.db, dbsqlc.ForgetMentionsParams{WorkspaceID: ws, Mentions: found})
}

// tombstoneToCommit is tombstone, and tombstoneLate from where ws's cursor stood before it:
// for a transaction that has nothing left to do but commit.
func (q *queries) tombstoneToCommit(ctx context.Context, ws uuid.UUID, ids []string) (int64, error) {
	from, err := q.sql.WorkspaceEventSeq(ctx, q.db, ws)
	if err != nil {
		return 0, err
	}
	n, err := q.tombstone(ctx, ws, ids)
	if err != nil {
		return 0, err
	}
	late, err := q.tombstoneLate(ctx, ws, ids, from)
	return n + late, err
}

// tombstoneLate tombstones, by pattern, ws's events after seq from that mention any of ids,
// and leaves none to come until the transaction commits. from is ws's event cursor as read
// (committed) before the tombstone: an event's seq is assigned under the workspace's row lock,
// held until its transaction commits, so every event at or before from was visible to the
// tombstone's statements, and only those after it may have committed too late for them. The
// workspace's row lock (FOR NO KEY UPDATE, as a settlement takes it), held from here to
// COMMIT, makes every event being appended commit first and every later one wait. Without
// it, an event about a conversation or contact being erased that a turn or a delivery
// status appended during the erasure kept its data. The events after from are caught up
// once without the lock, so that it is held over those of the last few milliseconds only:
// a workspace's turns queue for it.
func (q *queries) tombstoneLate(ctx context.Context, ws uuid.UUID, ids []string, from int64) (int64, error) {
	patterns := likePatterns(ids)
	caught, err := q.sql.WorkspaceEventSeq(ctx, q.db, ws)
	if err != nil {
		return 0, err
	}
	n, err := q.sql.TombstoneEventsAfter(ctx, q.db, dbsqlc.TombstoneEventsAfterParams{WorkspaceID: ws, AfterSeq: from, Patterns: patterns})
	if err != nil {
		return 0, err
	}
	if err := q.sql.LockWorkspacesInOrder(ctx, q.db, []uuid.UUID{ws}); err != nil {
		return 0, err
	}
	last, err := q.sql.TombstoneEventsAfter(ctx, q.db, dbsqlc.TombstoneEventsAfterParams{WorkspaceID: ws, AfterSeq: caught, Patterns: patterns})
	return n + last, err
}

// likePatterns are LIKE patterns matching each of ids anywhere.
func likePatterns(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "%" + likeEscape(id) + "%"
	}
	return out
}

// mentionNeedles are the ids the events about these conversations write: UUID and short id.
func mentionNeedles(ids []uuid.UUID, shorts []string) []string {
	out := make([]string, 0, 2*len(ids))
	for i, id := range ids {
		out = append(out, id.String(), shorts[i])
	}
	return out
}
