package voice

import (
	"context"
	"strconv"
	"strings"

	"github.com/twilio/twilio-go/twiml"

	"switchboard/store"
)

// maxVoicemailSeconds bounds a message left after a transfer nobody answered.
const maxVoicemailSeconds = 120

// dial is told how a transfer ended: answered (completed) ends the call; anything else tells
// the caller and lets them leave a message.
func (f *flow) dial(ctx context.Context) (string, error) {
	seq, err := f.turnParam()
	if err != nil {
		return "", err
	}
	call, sp, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	if f.form.Get("DialCallStatus") == "completed" {
		return twiml.Voice([]twiml.Element{&twiml.VoiceHangup{}})
	}
	if err := f.s.store.SetVoiceCallOutcome(ctx, f.c.WorkspaceID, call.ID, outcomeUnanswered); err != nil {
		return "", err
	}
	record := &twiml.VoiceRecord{Action: f.url("recorded", seq, 0), Method: "POST", MaxLength: strconv.Itoa(maxVoicemailSeconds),
		PlayBeep: "true", FinishOnKey: "#", Timeout: "5"}
	// <Record> goes on to the next verbs when nothing was recorded.
	return twiml.Voice([]twiml.Element{sp.fixed(phNoAnswer), record, sp.fixed(phNoMessage), &twiml.VoiceHangup{}})
}

// whisper is what the person who answers a transfer hears before the caller is put through:
// who calls and what they said to the agent.
func (f *flow) whisper(ctx context.Context) (string, error) {
	call, sp, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	summary, err := f.summary(ctx, call)
	if err != nil {
		return "", err
	}
	return twiml.Voice([]twiml.Element{sp.say(summary)})
}

// summary is the whisper: the caller's number and their last words to the agent.
func (f *flow) summary(ctx context.Context, call store.VoiceCall) (string, error) {
	var said []string
	if call.ConversationID != nil {
		lines, err := f.s.store.Transcript(ctx, f.c.WorkspaceID, *call.ConversationID)
		if err != nil {
			return "", err
		}
		for _, l := range lines {
			if l.Role == "user" {
				said = append(said, strings.TrimRight(strings.TrimSpace(l.Content), ".!?")+".")
			}
		}
	}
	if len(said) > 3 {
		said = said[len(said)-3:]
	}
	text := "A call transferred by the AI assistant, from " + spell(call.Remote) + "."
	if len(said) > 0 {
		text += " The caller said: " + strings.Join(said, " ")
	}
	return Spoken(text), nil
}

// spell says a phone number digit by digit.
func spell(number string) string {
	var b strings.Builder
	for _, r := range number {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// recorded keeps the message the caller left on the call and in its conversation.
func (f *flow) recorded(ctx context.Context) (string, error) {
	call, sp, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	recURL := strings.TrimSpace(f.form.Get("RecordingUrl"))
	seconds, _ := atoi(f.form.Get("RecordingDuration"))
	if recURL == "" || seconds <= 0 {
		return twiml.Voice([]twiml.Element{sp.fixed(phNoMessage), &twiml.VoiceHangup{}})
	}
	err = f.s.store.InTx(ctx, func(tx *store.Tx) error {
		// The conversation's message before the call's row, in the order a delete of
		// conversations locks them (the conversation, then its calls' link to it).
		if call.ConversationID != nil {
			note := "Voicemail (" + strconv.Itoa(seconds) + " s): " + recURL
			if err := tx.AppendMessages(ctx, f.c.WorkspaceID, *call.ConversationID, []store.Message{{Role: "user", Content: note}}); err != nil {
				return err
			}
		}
		return tx.SetVoicemail(ctx, f.c.WorkspaceID, call.ID, recURL, seconds)
	})
	if err != nil {
		return "", err
	}
	return twiml.Voice([]twiml.Element{sp.fixed(phRecorded), &twiml.VoiceHangup{}})
}

func atoi(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	return n, err == nil
}
