package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestPackedNoticesDecodeToTheNoticesInOrder: runs of one workspace's notices share payloads
// under PostgreSQL's NOTIFY limit, a notice too large to share goes alone, and decoding the
// payloads gives back every notice, in order.
func TestPackedNoticesDecodeToTheNoticesInOrder(t *testing.T) {
	t.Parallel()
	a, b := uuid.New(), uuid.New()
	var want []Notice
	var notices []string
	add := func(ws uuid.UUID, seq int64, envelopeSize int) {
		body := map[string]string{"data": strings.Repeat("x", envelopeSize)}
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		e := Event{WorkspaceID: ws, Seq: seq, Type: "turn.completed", Envelope: raw, CreatedAt: time.Now()}
		notices = append(notices, notice(e))
		n := Notice{WorkspaceID: ws, Seq: seq, Type: e.Type}
		if len(raw) <= notifyLimit {
			n.Envelope = raw
		}
		want = append(want, n)
	}
	for i := int64(1); i <= 40; i++ {
		add(a, i, 450) // many small ones: several packs
	}
	add(b, 1, 300)
	add(b, 2, 6900) // too large to share a payload
	add(b, 3, 9000) // announced without its envelope
	add(a, 41, 10)  // a run of a again after b's

	payloads := packNotices(notices)
	require.Less(t, len(payloads), len(notices)/4, "40 small notices of one workspace share payloads")
	var got []Notice
	for _, p := range payloads {
		require.LessOrEqual(t, len(p), 8000, "PostgreSQL's NOTIFY limit")
		require.True(t, strings.HasPrefix(p, `{"w":"`), "the hub reads the workspace from the head")
		ns, err := DecodeNotices([]byte(p))
		require.NoError(t, err)
		for _, n := range ns {
			require.Equal(t, p[6:42], n.WorkspaceID.String(), "a payload holds one workspace's notices")
		}
		got = append(got, ns...)
	}
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i].WorkspaceID, got[i].WorkspaceID)
		require.Equal(t, want[i].Seq, got[i].Seq)
		require.Equal(t, want[i].Type, got[i].Type)
		if want[i].Envelope == nil {
			require.Nil(t, got[i].Envelope)
		} else {
			require.JSONEq(t, string(want[i].Envelope), string(got[i].Envelope))
		}
	}

	one, err := DecodeNotices([]byte(notices[0]))
	require.NoError(t, err)
	require.Len(t, one, 1, "a lone notice decodes as itself")
	require.Equal(t, int64(1), one[0].Seq)
}

// TestNoticeIsJSONMarshalOfItsNotice: the hand-written notice is byte for byte what
// json.Marshal gives, with and without an envelope, and a type that would need escaping is
// escaped.
func TestNoticeIsJSONMarshalOfItsNotice(t *testing.T) {
	t.Parallel()
	envelope, err := json.Marshal(map[string]any{"id": "evt_1", "data": map[string]any{"text": "héllo \"quoted\" <b>"}})
	require.NoError(t, err)
	for _, e := range []Event{
		{WorkspaceID: uuid.New(), Seq: 1, Type: "turn.completed", Envelope: envelope},
		{WorkspaceID: uuid.New(), Seq: 9007199254740993, Type: "spend.recorded"},
		{WorkspaceID: uuid.Nil, Seq: 0, Type: "conversation.created", Envelope: json.RawMessage(`{}`)},
		{WorkspaceID: uuid.New(), Seq: 2, Type: "turn.completed", Envelope: json.RawMessage(`{"data":"` + strings.Repeat("x", notifyLimit) + `"}`)},
		{WorkspaceID: uuid.New(), Seq: 3, Type: "odd \"type\"\n", Envelope: envelope},
	} {
		require.Equal(t, marshalNotice(e), notice(e), "event %q", e.Type)
		require.True(t, json.Valid([]byte(notice(e))))
	}
}
