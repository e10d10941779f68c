package store

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/shortid"
)

// TestMentionsInFindsWhatASubstringMatchFinds: for random envelopes made of ids, pieces of
// ids and their neighbours, an id the recorder can find (recordable) is among mentionsIn's
// exactly when the envelope contains it, as LIKE '%id%' would say: glued to other
// identifier characters, overlapping another, cut short or too long.
func TestMentionsInFindsWhatASubstringMatchFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, 0, 8)
	for range 4 {
		ids = append(ids, shortid.New(shortid.Conversation), uuid.NewString())
	}
	pieces := []string{`"`, `{"data":{"conversation_id":"`, "mc-", "mc-mc-", "-", "x", "0", "abc", "ABCDEF", " ", `\n`}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			switch id := ids[r.IntN(len(ids))]; r.IntN(4) {
			case 0:
				b.WriteString(id)
			case 1:
				b.WriteString(id[:r.IntN(len(id))])
			case 2:
				b.WriteString(id[r.IntN(len(id)):])
			default:
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
		}
		env := b.String()
		shorts, uuids := mentionsIn(env)
		found := slices.Clone(shorts)
		for _, u := range uuids {
			found = append(found, u.String())
		}
		for _, id := range ids {
			require.True(t, recordable(id))
			require.Equal(t, strings.Contains(env, id), slices.Contains(found, id), "%s in %q", id, env)
		}
		for _, f := range found {
			require.True(t, strings.Contains(env, f), "%s is not in %q", f, env)
			require.True(t, recordable(f))
		}
	}
}

func TestRecordable(t *testing.T) {
	require.True(t, recordable(uuid.NewString()))
	require.False(t, recordable(strings.ToUpper(uuid.NewString())), "a LIKE of the lower-case form does not match it")
	require.True(t, recordable(shortid.New(shortid.Conversation)))
	require.False(t, recordable("mc-1-50"), "a short id of another form is matched by pattern")
	require.False(t, recordable(shortid.New(shortid.Conversation)+"x"))
}
