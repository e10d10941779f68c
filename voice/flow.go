package voice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/google/uuid"
	"github.com/twilio/twilio-go/twiml"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/manage"
	"switchboard/quota"
	"switchboard/sms"
	"switchboard/store"
)

// Call outcomes, as voice_calls.outcome keeps them.
const (
	outcomeNoCredit    = "no_credit"
	outcomeNoAgent     = "no_agent"
	outcomeAfterHours  = "after_hours"
	outcomeSilence     = "silence"
	outcomeTransferred = "transferred"
	outcomeUnanswered  = "transfer_unanswered"
	outcomeHangup      = "agent_hangup"
	// Outbound (campaign) calls: a machine answered and heard the voicemail drop; a fax.
	outcomeVoicemailDrop = "voicemail_drop"
	outcomeFax           = "fax"
)

// routes are the carrier's requests under a voice channel's inbound URL.
var routes = map[string]func(*flow, context.Context) (string, error){
	"":         (*flow).start,
	"gather":   (*flow).gather,
	"result":   (*flow).result,
	"dial":     (*flow).dial,
	"whisper":  (*flow).whisper,
	"recorded": (*flow).recorded,
	"status":   (*flow).status,
	"outbound": (*flow).outbound,
}

// flow is one carrier request about one call.
type flow struct {
	s     *Service
	c     store.Channel
	form  url.Values
	query url.Values
	call  sms.Call
}

// agentOf is the call's agent, enabled, with its blueprint; ok is false when there is none.
func (f *flow) agentOf(ctx context.Context, id *uuid.UUID) (store.Agent, *blueprint.Blueprint, bool, error) {
	if id == nil {
		return store.Agent{}, nil, false, nil
	}
	a, err := f.s.store.AgentByID(ctx, f.c.WorkspaceID, *id)
	if errors.Is(err, store.ErrNotFound) {
		return a, nil, false, nil
	}
	if err != nil {
		return a, nil, false, err
	}
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return a, nil, false, fmt.Errorf("stored blueprint of agent %s: %w", a.ID, err)
	}
	return a, &bp, a.Status == string(manage.AgentEnabled), nil
}

// start answers a call that comes in: who may answer, then the greeting, the disclosure and
// the first <Gather>. A retried webhook of the same call is answered the same way, without a
// second conversation.
func (f *flow) start(ctx context.Context) (string, error) {
	s, ws := f.s, f.c.WorkspaceID
	remote := f.call.From
	if n, err := sms.NormalizeE164(remote, ""); err == nil {
		remote = n
	}
	local := f.call.To
	if f.c.Address != nil {
		local = *f.c.Address
	}
	call, err := s.store.StartVoiceCall(ctx, ws, store.NewVoiceCall{ChannelID: f.c.ID, CallSID: f.call.SID, Direction: "inbound",
		Remote: remote, Local: local, AgentID: f.c.InboundAgent})
	if err != nil {
		return "", err
	}
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return "", err
	}
	a, bp, ok, err := f.agentOf(ctx, call.AgentID)
	if err != nil {
		return "", err
	}
	sp := speakerFor("en")
	if bp != nil {
		sp = speakerFor(bp.Agent.Language)
	}
	switch {
	case quota.Refusal(w) != "":
		return f.end(ctx, call, outcomeNoCredit, sp.fixed(phCannotPay))
	case !ok:
		return f.end(ctx, call, outcomeNoAgent, sp.fixed(phNoAgent))
	}
	if r := bp.Agent.BusinessRules; r != nil && r.BusinessHours != nil {
		open, err := converse.Open(r.BusinessHours, s.now())
		if err != nil {
			return "", err
		}
		if !open {
			msg := r.BusinessHours.AfterHoursMessage
			if msg == "" {
				msg = converse.DefaultAfterHoursMessage
			}
			return f.end(ctx, call, outcomeAfterHours, sp.say(msg))
		}
	}
	if call.ConversationID == nil {
		if err := f.open(ctx, &call, remote); err != nil {
			return "", err
		}
	}
	verbs := []twiml.Element{sp.say(bp.Agent.Persona.Greeting)}
	disclosure, _, err := f.disclosure(ctx, a, bp, sp)
	if err != nil {
		return "", err
	}
	verbs = append(verbs, disclosure...)
	return twiml.Voice(append(verbs, f.listen(sp, 1)))
}

// open opens the call's conversation: the greeting and the disclosure are its first messages.
func (f *flow) open(ctx context.Context, call *store.VoiceCall, remote string) error {
	s, ws := f.s, f.c.WorkspaceID
	contact, err := s.store.ContactForPhone(ctx, ws, remote)
	if err != nil {
		return err
	}
	short, err := s.agents.Open(ctx, converse.Request{WorkspaceID: ws, AgentID: *call.AgentID, Channel: "telco_voice", ContactID: &contact,
		Thread: &converse.Thread{ChannelID: f.c.ID, Remote: remote}})
	if err != nil {
		return err
	}
	conv, err := s.store.ConversationByRef(ctx, ws, short)
	if err != nil {
		return err
	}
	call.ConversationID = &conv.ID
	return s.store.SetVoiceCallConversation(ctx, ws, call.ID, conv.ID)
}

// disclosure is what the caller hears about speaking with an AI, when it applies: the
// disclosure recording played, or its text said (the agent's own, else the platform's
// default: a null text is never silence). text is the disclosure's text, for the
// transcript ("": none applies).
func (f *flow) disclosure(ctx context.Context, a store.Agent, bp *blueprint.Blueprint, sp speaker) (verbs []twiml.Element, text string, err error) {
	deployed, err := f.s.store.AgentDeployments(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return nil, "", err
	}
	d := manage.DisclosureOf(a, bp, deployed)
	if !d.Applies {
		return nil, "", nil
	}
	if a.DisclosureRecordingID != nil {
		rec, err := f.s.store.RecordingByID(ctx, a.WorkspaceID, *a.DisclosureRecordingID)
		if err == nil && rec.Format != "" {
			return []twiml.Element{&twiml.VoicePlay{Url: f.s.MediaURL(rec)}}, d.SpokenText, nil
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, "", err
		}
		// A recording without audio (or gone) cannot be played: its text is said instead.
	}
	return []twiml.Element{sp.say(d.SpokenText)}, d.SpokenText, nil
}

// MediaURL is where the carrier fetches a recording: unguessable, never listed.
func (s *Service) MediaURL(r store.Recording) string {
	return s.publicURL + "/media/recordings/" + r.MediaToken + "." + r.Format
}

// listen is the <Gather> of turn seq: speech in the agent's language, posted to .../gather
// also when nothing was heard, so that silence is counted.
func (f *flow) listen(sp speaker, seq int) twiml.Element {
	return &twiml.VoiceGather{Input: "speech", Action: f.url("gather", seq, 0), Method: "POST", Language: sp.language,
		SpeechTimeout: "auto", Timeout: "6", ActionOnEmptyResult: "true"}
}

// url is the URL of a route of this channel for turn seq (0: none) and wait.
func (f *flow) url(route string, seq, wait int) string {
	u := f.s.chans.InboundURL(f.c) + "/" + route
	q := url.Values{}
	if seq > 0 {
		q.Set("turn", strconv.Itoa(seq))
	}
	if wait > 0 {
		q.Set("wait", strconv.Itoa(wait))
	}
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// end says something and hangs up, keeping why on the call.
func (f *flow) end(ctx context.Context, call store.VoiceCall, outcome string, said ...twiml.Element) (string, error) {
	if err := f.s.store.SetVoiceCallOutcome(ctx, f.c.WorkspaceID, call.ID, outcome); err != nil {
		return "", err
	}
	return twiml.Voice(append(said, &twiml.VoiceHangup{}))
}

// current is the call this request is about, with its agent's speaker.
func (f *flow) current(ctx context.Context) (store.VoiceCall, speaker, *blueprint.Blueprint, error) {
	call, err := f.s.store.VoiceCallBySID(ctx, f.c.WorkspaceID, f.c.ID, f.call.SID)
	if err != nil {
		return call, speaker{}, nil, apierr.WithParam(err, "CallSid")
	}
	_, bp, _, err := f.agentOf(ctx, call.AgentID)
	if err != nil {
		return call, speaker{}, nil, err
	}
	sp := speakerFor("en")
	if bp != nil {
		sp = speakerFor(bp.Agent.Language)
	}
	return call, sp, bp, nil
}

// turnParam is the turn number of the request's URL.
func (f *flow) turnParam() (int, error) {
	n, err := strconv.Atoi(f.query.Get("turn"))
	if err != nil || n < 1 {
		return 0, apierr.Invalid("turn", "invalid_value", "turn must be a turn number, as the gather's URL gives it.")
	}
	return n, nil
}
