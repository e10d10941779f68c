package server_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/sms/smstest"
	"switchboard/store/storetest"
)

// TestVoiceCallEndingWaitsForADeleteOfItsConversation: a call's final status ends the call's
// row, then closes its conversation and meters the call; deleting the conversation (a bulk
// delete, retention) locks it, then clears its calls' link to it. The status takes the
// conversation's KEY SHARE before the call's row, so the delete waits for it instead of each
// holding the row the other needs (40P01 before: the callback failed, the carrier does not
// send it again, and the call stayed unended and unmetered).
func TestVoiceCallEndingWaitsForADeleteOfItsConversation(t *testing.T) {
	t.Parallel()
	w := newVoiceWorld(t, "")
	const sid = "CA00000000000000000000000000000031"
	w.post(t, "", smstest.CallForm(sid, ann, lineNumber, "ringing"))
	conv := w.call(t, sid).ConversationID
	require.NotNil(t, conv)

	st := w.b.store
	release := storetest.HoldWrites(t, st, "voice_calls", "UPDATE", "OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL") // the call's end

	full := *w.channel.InboundURL + "/status"
	form := smstest.CallStatusForm(sid, ann, lineNumber, "completed", 65)
	signature := w.carrier.Sign(full, form)
	u, err := url.Parse(full)
	require.NoError(t, err)
	var code int
	ended, endErr := storetest.InBackground(func(ctx context.Context) error {
		resp, err := smstest.PostWithSignature(ctx, http.DefaultClient, w.b.url+u.Path, form, signature)
		if err != nil {
			return err
		}
		code = resp.StatusCode
		return resp.Body.Close()
	})
	storetest.WaitBlockedOrDone(t, st, ended) // the callback is held after the call's row
	deleted, deleteErr := storetest.InBackground(func(ctx context.Context) error {
		_, err := st.Pool().Exec(ctx, `DELETE FROM conversations WHERE id = $1`, *conv)
		return err
	})
	storetest.WaitWaitersOrDone(t, st, 2, deleted) // and the delete for what the callback holds
	release()
	<-ended
	<-deleted
	require.NoError(t, *endErr, "the status callback")
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, *deleteErr, "the delete")

	call := w.call(t, sid)
	require.NotNil(t, call.EndedAt, "the call ended")
	require.Nil(t, call.ConversationID, "its conversation deleted after")
	require.Len(t, voiceSpend(t, w.b), 1, "metered once: two started minutes")
}
