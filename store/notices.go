package store

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// Notice announces that a workspace's events of cursors First..Last committed. It carries
// no envelope: a process whose feeds watch the workspace reads the events from the table,
// once for all of them (events.Hub), and the others drop it after reading the workspace id.
//
// It used to carry every event's envelope. Under load that was most of what the write-behind
// flush of ephemeral turns sent: PostgreSQL queued it and delivered it to every replica's
// listener, which for most of it had no feed open, and a turn's two envelopes were copied
// five times on their way out. A notice is now one line per workspace and transaction,
// whatever the number of events; with it (and the flush's leaner envelopes) PostgreSQL's CPU
// per ephemeral turn fell from 27 to 21 µs and the server's from 102 to 96 µs, medians of
// eight alternating rounds (docs/benchmarks.md, seventeenth pass).
type Notice struct {
	WorkspaceID uuid.UUID
	First, Last int64
}

// packLimit bounds a payload under PostgreSQL's 8000-byte NOTIFY limit.
const packLimit = 7900

// announce sends committed events' notices to every replica's listener. It runs after the
// commit, outside the transaction: a NOTIFY inside it would take PostgreSQL's cluster-wide
// notification lock at commit and serialize all committing turns. A notice lost to a crash
// here only delays a live tail: the outbox is the record, and the hub catches up from it.
func (s *Store) announce(ctx context.Context, notices []Notice) {
	_ = s.sql.Announce(ctx, s.pool, dbsqlc.AnnounceParams{Channel: EventChannel, Payloads: EncodeNotices(notices)})
}

// EncodeNotices writes notices as payloads of lines `<workspace id> <first> <last>`, as many
// lines to a payload as packLimit allows (about 130).
func EncodeNotices(notices []Notice) []string {
	var out []string
	b := make([]byte, 0, min(packLimit, len(notices)*noticeLineMax))
	for _, n := range notices {
		if len(b)+noticeLineMax > packLimit {
			out, b = append(out, string(b)), b[:0]
		}
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = appendUUID(b, n.WorkspaceID)
		b = append(b, ' ')
		b = strconv.AppendInt(b, n.First, 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, n.Last, 10)
	}
	if len(b) > 0 {
		out = append(out, string(b))
	}
	return out
}

// noticeLineMax is the longest line of a payload: a UUID, two int64s, two spaces and a
// newline.
const noticeLineMax = 36 + 2*20 + 3

var errNotice = errors.New("store: malformed event notice")

// DecodeNotices reads a payload of EncodeNotices, in order.
func DecodeNotices(payload string) ([]Notice, error) {
	out := make([]Notice, 0, strings.Count(payload, "\n")+1)
	for line := range strings.SplitSeq(payload, "\n") {
		ws, rest, ok := strings.Cut(line, " ")
		first, last, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 {
			return nil, errNotice
		}
		var n Notice
		var err1, err2, err3 error
		n.WorkspaceID, err1 = uuid.Parse(ws)
		n.First, err2 = strconv.ParseInt(first, 10, 64)
		n.Last, err3 = strconv.ParseInt(last, 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || n.First < 1 || n.Last < n.First {
			return nil, errNotice
		}
		out = append(out, n)
	}
	return out, nil
}
