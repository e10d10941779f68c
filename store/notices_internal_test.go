package store

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestNoticesDecodeToTheNoticesInOrder: notices share payloads under PostgreSQL's NOTIFY
// limit, and decoding the payloads gives back every notice, in order.
func TestNoticesDecodeToTheNoticesInOrder(t *testing.T) {
	t.Parallel()
	var want []Notice
	for i := int64(1); i <= 300; i++ {
		want = append(want, Notice{WorkspaceID: uuid.New(), First: i, Last: i * 1_000_000_007})
	}
	want = append(want, Notice{WorkspaceID: uuid.Nil, First: 1, Last: 1})
	payloads := EncodeNotices(want)
	require.Len(t, payloads, 3, "about 100 notices to a payload")
	var got []Notice
	for _, p := range payloads {
		require.LessOrEqual(t, len(p), 8000, "PostgreSQL's NOTIFY limit")
		ns, err := DecodeNotices(p)
		require.NoError(t, err)
		got = append(got, ns...)
	}
	require.Equal(t, want, got)
	require.Empty(t, EncodeNotices(nil), "nothing to announce, no payload")
}

func TestDecodeNoticesRefusesWhatItDidNotWrite(t *testing.T) {
	t.Parallel()
	ws := uuid.NewString()
	for _, payload := range []string{
		"",
		ws,
		ws + " 1",
		ws + " 1 x",
		ws + " 0 3",
		ws + " 5 4",
		"not-a-uuid 1 2",
		ws + " 1 2\n",
		`{"w":"` + ws + `","s":1}`,
	} {
		_, err := DecodeNotices(payload)
		require.Error(t, err, "payload %q", payload)
	}
}

// TestMarshalEnvelopeIsJSONMarshal: the envelope written by hand is byte for byte what
// json.Marshal gives for the wire shape, whatever the type and data need escaped.
func TestMarshalEnvelopeIsJSONMarshal(t *testing.T) {
	t.Parallel()
	at := []time.Time{
		time.Date(2026, 11, 24, 21, 52, 23, 398089000, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC),
	}
	for i, c := range []struct {
		typ  string
		data any
	}{
		{"turn.completed", map[string]any{"text": "héllo \"quoted\" <b>&\u2028", "n": 1}},
		{"spend.recorded", json.RawMessage(`{ "amount_usd" : 0.1 }`)},
		{"odd \"type\"\n<", nil},
		{"conversation.created", struct {
			ID *string `json:"id"`
		}{}},
	} {
		ev := Event{WorkspaceID: uuid.New(), ShortID: "evt_" + strings.Repeat("A", 22), Type: c.typ, CreatedAt: at[i%len(at)]}
		want, err := json.Marshal(envelope{ID: ev.ShortID, Type: ev.Type, WorkspaceID: ev.WorkspaceID.String(), CreatedAt: ev.CreatedAt, Data: c.data})
		require.NoError(t, err)
		got, err := marshalEnvelope(ev, c.data)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	_, err := marshalEnvelope(Event{}, func() {})
	require.Error(t, err, "data encoding/json cannot write")
}
