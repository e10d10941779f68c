package voice

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/twilio/twilio-go/twiml"

	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/quota"
	"switchboard/store"
)

// Turn actions (voice_turns.action): what follows the spoken reply.
const (
	actionListen   = "listen"
	actionTransfer = "transfer"
	actionHangup   = "hangup"
)

// gather takes what the caller said as turn N. Silence is counted: the first asks whether
// they are still there, the second in a row says goodbye and hangs up. Speech is written as
// the turn (once: a retried webhook finds it) and answered by the model off the request;
// the answer is spoken if it comes within SlowAfter, otherwise a holding phrase is said and
// the carrier is redirected to pick it up.
func (f *flow) gather(ctx context.Context) (string, error) {
	seq, err := f.turnParam()
	if err != nil {
		return "", err
	}
	call, sp, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	ws := f.c.WorkspaceID
	speech := strings.TrimSpace(f.form.Get("SpeechResult"))
	silent, err := f.s.store.CountSilentGather(ctx, ws, call.ID, speech == "")
	if err != nil {
		return "", err
	}
	if speech == "" {
		if silent >= 2 {
			return f.end(ctx, call, outcomeSilence, sp.fixed(phGoodbye))
		}
		return twiml.Voice([]twiml.Element{sp.fixed(phStillThere), f.listen(sp, seq)})
	}
	if len([]rune(speech)) > converse.MaxMessageChars {
		speech = string([]rune(speech)[:converse.MaxMessageChars])
	}
	fresh, err := f.s.store.StartVoiceTurn(ctx, ws, call.ID, seq, speech)
	if err != nil {
		return "", err
	}
	if fresh {
		f.s.turns.Add(1)
		go func() {
			defer f.s.turns.Done()
			f.s.runTurn(context.WithoutCancel(ctx), f.c, call, seq, speech)
		}()
	}
	return f.pickUp(ctx, call, sp, seq, 0)
}

// result picks up a slow turn's answer after a holding phrase (the <Redirect>).
func (f *flow) result(ctx context.Context) (string, error) {
	seq, err := f.turnParam()
	if err != nil {
		return "", err
	}
	call, sp, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	wait := 1
	if n, ok := atoi(f.query.Get("wait")); ok && n > 0 {
		wait = n
	}
	return f.pickUp(ctx, call, sp, seq, wait)
}

// pickUp waits up to SlowAfter for turn seq's answer and speaks it; while it is not there,
// the carrier is told to come back (a holding phrase the first time), until the turn's
// model call has timed out.
func (f *flow) pickUp(ctx context.Context, call store.VoiceCall, sp speaker, seq, wait int) (string, error) {
	t, err := f.s.awaitTurn(ctx, f.c.WorkspaceID, call, seq)
	if err != nil {
		return "", err
	}
	switch {
	case t.Status == "answered":
		return f.speak(ctx, call, sp, t)
	case t.Status == "failed" || time.Since(t.CreatedAt) > f.s.TurnTimeout+f.s.SlowAfter:
		// Failed, or lost with a replica that stopped while answering it: asked again.
		return twiml.Voice([]twiml.Element{sp.fixed(phNotHeard), f.listen(sp, seq+1)})
	}
	var verbs []twiml.Element
	if wait == 0 {
		verbs = append(verbs, sp.fixed(phHolding))
	}
	return twiml.Voice(append(verbs, &twiml.VoiceRedirect{Url: f.url("result", seq, wait+1), Method: "POST"}))
}

// awaitTurn reads turn seq until it is answered or SlowAfter has passed. The turn is read
// from the database, so a redirect reaching another replica picks it up too.
func (s *Service) awaitTurn(ctx context.Context, ws uuid.UUID, call store.VoiceCall, seq int) (store.VoiceTurn, error) {
	deadline := time.Now().Add(s.SlowAfter)
	poll := 20 * time.Millisecond
	for {
		t, err := s.store.VoiceTurnOf(ctx, ws, call.ID, seq)
		if err != nil || t.Status != "pending" || !time.Now().Before(deadline) {
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(min(poll, time.Until(deadline))):
		}
		poll = min(poll*2, 200*time.Millisecond)
	}
}

// speak says an answered turn and what follows it.
func (f *flow) speak(ctx context.Context, call store.VoiceCall, sp speaker, t store.VoiceTurn) (string, error) {
	var verbs []twiml.Element
	if t.Reply != nil && *t.Reply != "" {
		verbs = append(verbs, sp.say(*t.Reply))
	}
	switch deref(t.Action) {
	case actionTransfer:
		_, bp, _, err := f.agentOf(ctx, call.AgentID)
		if err != nil {
			return "", err
		}
		if number := transferNumber(bp); number != "" {
			dial := &twiml.VoiceDial{Action: f.url("dial", t.Seq, 0), Method: "POST", Timeout: "20", AnswerOnBridge: "true",
				InnerElements: []twiml.Element{&twiml.VoiceNumber{PhoneNumber: number, Url: f.url("whisper", t.Seq, 0), Method: "POST"}}}
			if err := f.s.store.SetVoiceCallOutcome(ctx, f.c.WorkspaceID, call.ID, outcomeTransferred); err != nil {
				return "", err
			}
			return twiml.Voice(append(verbs, dial))
		}
		return f.end(ctx, call, outcomeHangup, append(verbs, sp.fixed(phCallBack))...)
	case actionHangup:
		if len(verbs) == 0 { // the workspace could not pay for the turn (answer)
			return f.end(ctx, call, outcomeNoCredit, sp.fixed(phCannotPay))
		}
		return f.end(ctx, call, outcomeHangup, verbs...)
	}
	return twiml.Voice(append(verbs, f.listen(sp, t.Seq+1)))
}

// runTurn answers turn seq through the deployed-agent runtime and stores the answer. It runs
// off the carrier's request, so a slow model never holds the call up.
func (s *Service) runTurn(ctx context.Context, c store.Channel, call store.VoiceCall, seq int, speech string) {
	ctx, cancel := context.WithTimeout(ctx, s.TurnTimeout)
	defer cancel()
	ws := c.WorkspaceID
	reply, action, err := s.answer(ctx, ws, call, speech)
	status := "answered"
	if err != nil {
		s.log.WarnContext(ctx, "a call's turn got no answer", slog.String("call", call.ID.String()), slog.Int("turn", seq), slog.String("error", err.Error()))
		status, reply, action = "failed", "", ""
	}
	done := context.WithoutCancel(ctx)
	if err := s.store.FinishVoiceTurn(done, ws, call.ID, seq, status, nonEmpty(reply), nonEmpty(action)); err != nil {
		s.log.ErrorContext(done, "storing a call's turn", slog.String("call", call.ID.String()), slog.String("error", err.Error()))
	}
}

// answer is the agent's spoken reply to speech and what follows it. A workspace that cannot
// pay is not answered by the model: the caller hears an apology and the call ends.
func (s *Service) answer(ctx context.Context, ws uuid.UUID, call store.VoiceCall, speech string) (reply, action string, err error) {
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return "", "", err
	}
	if quota.Refusal(w) != "" {
		// The apology is said by speak, in the agent's language: a hangup without a reply.
		return "", actionHangup, nil
	}
	if call.AgentID == nil || call.ConversationID == nil {
		return "", "", errors.New("the call has no agent or conversation")
	}
	ans, err := s.agents.Chat(ctx, converse.Request{WorkspaceID: ws, AgentID: *call.AgentID, Message: speech,
		ConversationID: call.ConversationID.String(), Channel: "telco_voice", Instructions: Instructions})
	if err != nil {
		return "", "", err
	}
	reply = Spoken(ans.Reply)
	switch {
	case ans.Status == converse.StatusEscalated && ans.Escalation != nil && ans.Escalation.Action == string(blueprint.ActionTransferToHuman):
		return reply, actionTransfer, nil
	case reply == "":
		// A person holds the conversation, or it waits for one: the agent says nothing more.
		return "", actionTransfer, nil
	}
	return reply, actionListen, nil
}

// transferNumber is the number a transfer_to_human dials on a call, if the agent has one.
func transferNumber(bp *blueprint.Blueprint) string {
	if bp == nil || bp.Agent.BusinessRules == nil || bp.Agent.BusinessRules.Escalation == nil {
		return ""
	}
	return bp.Agent.BusinessRules.Escalation.TransferNumber
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
