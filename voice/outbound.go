package voice

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/twilio/twilio-go/twiml"

	"switchboard/apierr"
	"switchboard/llm"
	"switchboard/quota"
	"switchboard/sms"
	"switchboard/store"
)

// Outbound calls of voice campaigns (package campaigns decides whom to call, and when; this
// places the call and answers it). The call is placed with answering-machine detection
// (sms.MachineDetection); once answered, the carrier fetches .../outbound?send=ID with
// AnsweredBy. A machine hears the campaign's voicemail_drop recording, after the beep, then
// the call hangs up. A person hears the agent's disclosure first (when it applies), then the
// campaign's first_message or the persona's greeting, then the speech loop of an inbound
// call (gather, result, dial, ... are the same routes). The call's status callback
// (.../status?send=ID) meters it per started minute and counts it on its campaign.

// Configured says whether calls can be placed (campaigns.Caller).
func (s *Service) Configured() bool { return s.carrier.Configured() }

// PlaceCall places a campaign's call to from the voice channel ch (campaigns.Caller) and
// records it; the call's webhooks record it too when they come first.
func (s *Service) PlaceCall(ctx context.Context, ch store.Channel, to string, sendID uuid.UUID) (string, error) {
	if ch.Address == nil {
		return "", errors.New("the voice channel has no number")
	}
	in := s.chans.InboundURL(ch)
	q := "?send=" + sendID.String()
	sid, err := s.carrier.PlaceCall(ctx, sms.OutboundCall{From: *ch.Address, To: to, URL: in + "/outbound" + q, StatusCallback: in + "/status" + q})
	if err != nil {
		return "", err
	}
	if _, _, err := s.campaignCall(context.WithoutCancel(ctx), ch, sid, sendID); err != nil {
		s.log.WarnContext(ctx, "recording a placed campaign call", slog.String("call_sid", sid), slog.String("error", err.Error()))
	}
	return sid, nil
}

// campaignCall is the outbound call sid of the campaign send sendID, recorded once.
func (s *Service) campaignCall(ctx context.Context, ch store.Channel, sid string, sendID uuid.UUID) (store.VoiceCall, store.CampaignCall, error) {
	cc, err := s.store.CampaignCallOf(ctx, ch.WorkspaceID, sendID)
	if err != nil {
		return store.VoiceCall{}, cc, apierr.WithParam(err, "send")
	}
	remote, local := "", ""
	if cc.Phone != nil {
		remote = *cc.Phone
	}
	if ch.Address != nil {
		local = *ch.Address
	}
	call, err := s.store.StartVoiceCall(ctx, ch.WorkspaceID, store.NewVoiceCall{ChannelID: ch.ID, CallSID: sid, Direction: "outbound",
		Remote: remote, Local: local, AgentID: cc.AgentID, ConversationID: cc.ConversationID, CampaignSendID: &cc.ID})
	return call, cc, err
}

// sendParam is the campaign send of the request's URL.
func (f *flow) sendParam() (uuid.UUID, error) {
	id, err := uuid.Parse(f.query.Get("send"))
	if err != nil {
		return uuid.Nil, apierr.Invalid("send", "invalid_value", "send must be the campaign send's id, as the call's URL gives it.")
	}
	return id, nil
}

// isMachine says whether answering-machine detection's verdict is a machine (or a fax).
func isMachine(answeredBy string) bool {
	return strings.HasPrefix(answeredBy, "machine_") || answeredBy == "fax"
}

// outbound answers a campaign call once it is answered (AnsweredBy says by whom).
func (f *flow) outbound(ctx context.Context) (string, error) {
	sendID, err := f.sendParam()
	if err != nil {
		return "", err
	}
	ws := f.c.WorkspaceID
	call, cc, err := f.s.campaignCall(ctx, f.c, f.call.SID, sendID)
	if err != nil {
		return "", err
	}
	answeredBy := f.call.AnsweredBy
	if answeredBy == "" {
		answeredBy = "unknown" // detection gave no verdict: treated as a person
	}
	machine := isMachine(answeredBy)
	first, err := f.s.store.ApplyAnsweredBy(ctx, ws, sendID, answeredBy, machine)
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
	if answeredBy == "fax" {
		return f.end(ctx, call, outcomeFax)
	}
	if machine {
		return f.voicemailDrop(ctx, call, cc, first)
	}
	w, err := f.s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return "", err
	}
	switch {
	case quota.Refusal(w) != "":
		return f.end(ctx, call, outcomeNoCredit, sp.fixed(phCannotPay))
	case !ok:
		return f.end(ctx, call, outcomeNoAgent, sp.fixed(phNoAgent))
	}
	// The person did not call an AI: the disclosure comes first, before anything else is said.
	verbs, disclosed, err := f.disclosure(ctx, a, bp, sp)
	if err != nil {
		return "", err
	}
	greeting := bp.Agent.Persona.Greeting
	if cc.FirstMessage != nil && strings.TrimSpace(*cc.FirstMessage) != "" {
		greeting = *cc.FirstMessage
	}
	if greeting != "" {
		verbs = append(verbs, sp.say(greeting))
	}
	if first && call.ConversationID != nil {
		// The call's opening, as said, begins the conversation (once: a retried webhook
		// finds the verdict applied).
		var msgs []store.Message
		for _, m := range []string{disclosed, greeting} {
			if m != "" {
				msgs = append(msgs, store.Message{Role: string(llm.RoleAssistant), Content: m})
			}
		}
		if len(msgs) > 0 {
			if err := f.s.store.AppendMessages(ctx, ws, *call.ConversationID, msgs); err != nil {
				return "", err
			}
		}
	}
	return twiml.Voice(append(verbs, f.listen(sp, 1)))
}

// voicemailDrop plays the campaign's voicemail_drop recording to a machine (the carrier
// fetched the flow after the beep), then hangs up.
func (f *flow) voicemailDrop(ctx context.Context, call store.VoiceCall, cc store.CampaignCall, first bool) (string, error) {
	var verbs []twiml.Element
	if cc.VoicemailRecordingID != nil {
		rec, err := f.s.store.RecordingByID(ctx, f.c.WorkspaceID, *cc.VoicemailRecordingID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		if err == nil && rec.Format != "" {
			verbs = append(verbs, &twiml.VoicePlay{Url: f.s.MediaURL(rec)})
			if first && call.ConversationID != nil {
				note := "Voicemail drop left: " + rec.Name
				if err := f.s.store.AppendMessages(ctx, f.c.WorkspaceID, *call.ConversationID,
					[]store.Message{{Role: string(llm.RoleAssistant), Content: note}}); err != nil {
					return "", err
				}
			}
		}
	}
	return f.end(ctx, call, outcomeVoicemailDrop, verbs...)
}
