package channels

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/quota"
	"switchboard/sms"
	"switchboard/store"
)

// Queue is the job queue of channel replies: its own, so that hundreds of replies waiting
// on a slow model never hold up background turns or webhook deliveries.
const Queue = "channels"

// ReplyArgs is the job that answers one inbound message.
type ReplyArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	MessageID   uuid.UUID `json:"message_id"`
}

// Kind names the job.
func (ReplyArgs) Kind() string { return "channel_reply" }

// InsertOpts puts the job on the channels queue; a few attempts, since a model that fails
// three times in a row will not answer this message in time anyway.
func (ReplyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: replyAttempts}
}

const replyAttempts = 3

// Reasons an inbound message is kept without a reply.
const (
	reasonNoAgent       = "no_agent"
	reasonOptedOut      = "opted_out"
	reasonAgentDisabled = "agent_disabled"
	reasonHandedOver    = "handed_to_human"
	reasonModelFailed   = "model_failed"
	reasonNotText       = "not_text"
)

// ReplyWorker works ReplyArgs.
type ReplyWorker struct {
	river.WorkerDefaults[ReplyArgs]
	s *Service
}

// NewReplyWorker is the reply job's worker.
func NewReplyWorker(s *Service) *ReplyWorker { return &ReplyWorker{s: s} }

// Timeout bounds one answer: a model call with its tools, and the carrier.
func (w *ReplyWorker) Timeout(*river.Job[ReplyArgs]) time.Duration { return 6 * time.Minute }

// Work answers an inbound message: carrier keywords without the model; otherwise the agent
// of the remote party's open conversation, or the one holding the channel's inbound seat,
// through the same runtime as POST /api/agents/{id}/chat; the reply is sent once (a rerun
// after a crash finds it claimed). A message nobody may answer is kept in its conversation.
func (w *ReplyWorker) Work(ctx context.Context, job *river.Job[ReplyArgs]) error {
	s, ws := w.s, job.Args.WorkspaceID
	m, err := s.store.ChannelMessageByID(ctx, ws, job.Args.MessageID)
	if errors.Is(err, store.ErrNotFound) || err == nil && m.ChannelID == nil {
		return nil // erased, or its channel was deleted
	}
	if err != nil {
		return err
	}
	c, err := s.store.ChannelByID(ctx, ws, *m.ChannelID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	switch m.Status {
	case "answered":
		return s.sendReply(ctx, c, m) // a rerun after the answer was decided: send it if it was not
	case "stored":
		return nil
	}
	snd, ok := s.sender(c.Provider)
	if !ok {
		s.log.WarnContext(ctx, "no sender for a channel's reply", slog.String("provider", c.Provider))
		return nil
	}
	r := &reply{s: s, c: c, m: m, snd: snd}
	if handled, err := r.keyword(ctx); handled || err != nil {
		return err
	}
	if m.Kind != "text" {
		return r.notText(ctx)
	}
	return r.answer(ctx, job.Attempt >= replyAttempts)
}

// reply is the answering of one inbound message.
type reply struct {
	s   *Service
	c   store.Channel
	m   store.ChannelMessage
	snd Sender
	// claimed is the reply the turn's transaction wrote `sending`, for this run to hand to
	// the carrier (decided).
	claimed *store.ChannelMessage
}

// keyword answers the carrier keywords (STOP, START, HELP and their synonyms) without the
// model: the opt-out is recorded for this sender number and confirmed once.
func (r *reply) keyword(ctx context.Context) (bool, error) {
	kw := sms.KeywordOf(r.m.Body)
	if kw == sms.KeywordNone {
		return false, nil
	}
	w, err := r.s.store.WorkspaceByID(ctx, r.c.WorkspaceID)
	if err != nil {
		return true, err
	}
	var text string
	switch kw {
	case sms.KeywordStop:
		text = sms.StopConfirmation(w.Name)
	case sms.KeywordStart:
		text = sms.StartConfirmation(w.Name)
	default:
		text = r.helpText(w.Name)
	}
	conv, err := r.s.store.LatestThread(ctx, r.c.ID, r.m.Remote)
	var convID *uuid.UUID
	if err == nil {
		convID = &conv.ID
	}
	err = r.s.store.InTx(ctx, func(tx *store.Tx) error {
		if kw != sms.KeywordHelp {
			if err := tx.SetOptOut(ctx, r.c.WorkspaceID, r.m.Local, r.m.Remote, kw == sms.KeywordStop); err != nil {
				return err
			}
		}
		if err := tx.SetChannelMessageState(ctx, r.c.WorkspaceID, r.m.ID, "answered", ptr("keyword_"+kw.String()), convID); err != nil {
			return err
		}
		if err := r.s.claimReply(ctx, tx, r.c, r.m, r.snd.Units(text), text, convID); err != nil {
			return err
		}
		return r.s.charge(ctx, tx, r.c, Metered{Remote: r.m.Remote, Body: r.m.Body, Direction: "inbound", ConversationID: convID})
	})
	if err != nil {
		return true, err
	}
	return true, r.s.sendReply(ctx, r.c, r.m)
}

// helpText is the channel's help_text, or the default naming the workspace and how to stop.
func (r *reply) helpText(workspace string) string {
	var cfg map[string]any
	_ = json.Unmarshal(r.c.Config, &cfg)
	if t, ok := cfg["help_text"].(string); ok && t != "" {
		return t
	}
	return sms.DefaultHelpText(workspace)
}

// answer runs the agent on the message, or keeps it when nobody may answer.
func (r *reply) answer(ctx context.Context, lastAttempt bool) error {
	s, ws := r.s, r.c.WorkspaceID
	optedOut, err := s.store.OptedOut(ctx, ws, r.m.Local, r.m.Remote)
	if err != nil {
		return err
	}
	thread, err := s.store.LatestThread(ctx, r.c.ID, r.m.Remote)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	open := err == nil && thread.Status != converse.StatusClosed
	agentID := r.c.InboundAgent
	if open && thread.AgentID != nil {
		agentID = thread.AgentID // a reply to a campaign, or a conversation going on
	}
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return err
	}
	reason := quota.Refusal(w)
	switch {
	case optedOut:
		reason = reasonOptedOut // carriers forbid messaging them until START
	case reason != "":
	case agentID == nil:
		reason = reasonNoAgent
	}
	var agent *store.Agent
	if reason == "" {
		a, err := s.store.AgentByID(ctx, ws, *agentID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil || a.Status != "enabled" {
			reason = reasonAgentDisabled
		}
		agent = &a
	}
	if reason != "" {
		return r.keep(ctx, thread, open, reason)
	}
	// The agent and the thread's conversation, just read, are not read again by the runtime.
	req := converse.Request{WorkspaceID: ws, AgentID: *agentID, Agent: agent, Message: r.m.Body, Channel: r.c.Provider, SkipGreeting: true,
		Thread: &converse.Thread{ChannelID: r.c.ID, Remote: r.m.Remote}}
	if open {
		if thread.AgentID == nil {
			// Kept earlier with nobody to answer: the seat's agent takes it from here.
			if err := s.store.AssignConversationAgent(ctx, ws, thread.ID, *agentID); err != nil {
				return err
			}
		}
		req.ConversationID, req.Conversation = thread.ShortID, &thread.ID
	} else {
		contact, err := contactFor(ctx, s.store, r.c, r.m.Remote)
		if err != nil {
			return err
		}
		req.ContactID = &contact
	}
	// The message stays `received` while the model answers: nothing is written before the
	// turn's transaction (a rerun treats both alike, and a write here cost a commit of its
	// own per message).
	req.Commit = r.decided
	if _, err := s.agents.Chat(ctx, req); err != nil {
		if apierr.IsKind(err, apierr.KindUpstream) && !lastAttempt {
			return err // the model failed: River tries again
		}
		s.log.WarnContext(ctx, "an inbound message got no answer", slog.String("message", r.m.ID.String()), slog.String("error", err.Error()))
		return r.keep(ctx, thread, open, reasonModelFailed)
	}
	if r.claimed != nil {
		return s.handOver(ctx, r.c, r.snd, *r.claimed) // claimed by the turn's transaction
	}
	return s.sendReply(ctx, r.c, r.m)
}

// decided records, in the transaction that stores the turn (converse.Request.Commit), that
// the message is answered, with the reply to send, pending, and its inbound charge, settled
// with the turn's: the turn and its reply are durable together, so a rerun of the job after
// a crash sends exactly this reply, or nothing if the carrier has it, and never asks the
// model again.
//
// On a channel without a customer-service window (SMS) the reply is written `sending`,
// claimed for the carrier call that follows the commit (r.claimed): no statement of its own
// between the turn and the carrier. A rerun that finds it `sending` asks the carrier
// (resolveSending).
func (r *reply) decided(ctx context.Context, tx *store.Tx, turn converse.Committed) ([]store.Settlement, error) {
	s, ws := r.s, r.c.WorkspaceID
	r.claimed = nil // it may run again: the transaction retried
	text := r.snd.Reply(turn.Reply)
	state, why := "answered", (*string)(nil)
	if text == "" {
		state, why = "stored", ptr(reasonHandedOver) // a person holds the conversation: the agent is silent
	}
	if err := tx.SetChannelMessageState(ctx, ws, r.m.ID, state, why, &turn.ConversationID); err != nil {
		return nil, err
	}
	if text != "" {
		_, windowed := r.snd.(Windowed)
		out := store.OutboundMessage{ChannelID: r.c.ID, Remote: r.m.Remote, Local: r.m.Local, Body: text, Segments: r.snd.Units(text),
			ConversationID: &turn.ConversationID, ReplyTo: &r.m.ID, Claimed: !windowed}
		id, fresh, err := tx.ClaimOutbound(ctx, ws, out)
		if err != nil {
			return nil, err
		}
		if fresh && out.Claimed {
			r.claimed = &store.ChannelMessage{ID: id, WorkspaceID: ws, ChannelID: &r.c.ID, Direction: "outbound", Remote: out.Remote,
				Local: out.Local, Body: out.Body, Segments: out.Segments, Status: "sending", ConversationID: out.ConversationID, ReplyTo: out.ReplyTo, Kind: "text"}
		}
	}
	fctx, f := foldCharges(ctx, turn.ConversationID, turn.ShortID)
	err := s.charge(fctx, tx, r.c, Metered{Remote: r.m.Remote, Body: r.m.Body, Direction: "inbound", ConversationID: &turn.ConversationID})
	return f.items, err
}

// keep stores the message in the remote party's conversation (opening one with no agent when
// there is none) without a reply, and says why on the message.
func (r *reply) keep(ctx context.Context, thread store.ThreadConversation, open bool, reason string) error {
	return r.s.store.InTx(ctx, func(tx *store.Tx) error {
		_, err := r.transcribe(ctx, tx, thread, open, "stored", reason, "")
		return err
	})
}

// transcribe writes the message into the remote party's conversation (opening one with no
// agent when there is none), moves it to state with its reason and, when reply is not "",
// claims that reply; it charges the inbound message last.
func (r *reply) transcribe(ctx context.Context, tx *store.Tx, thread store.ThreadConversation, open bool, state, reason, reply string) (uuid.UUID, error) {
	s, ws := r.s, r.c.WorkspaceID
	convID := thread.ID
	if !open {
		contact, err := contactFor(ctx, tx, r.c, r.m.Remote)
		if err != nil {
			return convID, err
		}
		conv, err := tx.OpenThread(ctx, ws, r.c.Provider, r.c.ID, r.m.Remote, contact)
		if err != nil {
			return convID, err
		}
		convID = conv.ID
		data := map[string]any{"conversation_id": conv.ShortID, "channel": conv.Channel, "contact_id": contact.String()}
		if _, err := tx.AppendEvents(ctx, ws, []store.NewEvent{{Type: "conversation.created", Data: data}}); err != nil {
			return convID, err
		}
	}
	if err := tx.AppendMessages(ctx, ws, convID, []store.Message{{Role: "user", Content: r.m.Body}}); err != nil {
		return convID, err
	}
	if err := tx.SetChannelMessageState(ctx, ws, r.m.ID, state, &reason, &convID); err != nil {
		return convID, err
	}
	if reply != "" {
		if err := s.claimReply(ctx, tx, r.c, r.m, r.snd.Units(reply), reply, &convID); err != nil {
			return convID, err
		}
	}
	return convID, s.charge(ctx, tx, r.c, Metered{Remote: r.m.Remote, Body: r.m.Body, Direction: "inbound", ConversationID: &convID})
}

// notText answers a message that is not text (an image, a voice note, a sticker, a location,
// a reaction) without the model: its placeholder goes into the transcript, and the person
// gets one reply, in the agent's language, saying that the agent reads text. Nobody answers
// it when nobody may be answered (opted out, no agent, no credit): it is kept.
func (r *reply) notText(ctx context.Context) error {
	s, ws := r.s, r.c.WorkspaceID
	optedOut, err := s.store.OptedOut(ctx, ws, r.m.Local, r.m.Remote)
	if err != nil {
		return err
	}
	thread, err := s.store.LatestThread(ctx, r.c.ID, r.m.Remote)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	open := err == nil && thread.Status != converse.StatusClosed
	agentID := r.c.InboundAgent
	if open && thread.AgentID != nil {
		agentID = thread.AgentID
	}
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		return err
	}
	reason := quota.Refusal(w)
	switch {
	case optedOut:
		reason = reasonOptedOut
	case reason != "":
	case agentID == nil:
		reason = reasonNoAgent
	}
	if reason != "" {
		return r.keep(ctx, thread, open, reason)
	}
	language := ""
	if a, err := s.store.AgentByID(ctx, ws, *agentID); err == nil {
		language = agentLanguage(a.Blueprint)
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		_, err := r.transcribe(ctx, tx, thread, open, "answered", reasonNotText, TextOnlyReply(language))
		return err
	})
	if err != nil {
		return err
	}
	return s.sendReply(ctx, r.c, r.m)
}

// claimReply writes the reply to an inbound message, pending, in the transaction that
// decides it (at most one per inbound message).
func (s *Service) claimReply(ctx context.Context, tx *store.Tx, c store.Channel, in store.ChannelMessage, units int, text string, convID *uuid.UUID) error {
	_, _, err := tx.ClaimOutbound(ctx, c.WorkspaceID, store.OutboundMessage{ChannelID: c.ID, Remote: in.Remote, Local: in.Local,
		Body: text, Segments: units, ConversationID: convID, ReplyTo: &in.ID})
	return err
}

// sendReply hands an inbound message's pending reply to the carrier, once (send). On a
// channel without a customer-service window the reply is claimed by the message it answers
// in one statement; one found in another state is left to send (`sending`: resolved).
func (s *Service) sendReply(ctx context.Context, c store.Channel, in store.ChannelMessage) error {
	if snd, ok := s.sender(c.Provider); ok {
		if _, windowed := snd.(Windowed); !windowed {
			reply, claimed, err := s.store.ClaimReply(ctx, c.WorkspaceID, in.ID)
			if err != nil {
				return err
			}
			if claimed {
				return s.handOver(ctx, c, snd, reply)
			}
		}
	}
	reply, err := s.store.ReplyOf(ctx, c.WorkspaceID, in.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // nothing to say (a person holds the conversation)
	}
	if err != nil {
		return err
	}
	return s.send(ctx, c, reply)
}

// send hands a pending outbound message to its channel's carrier or app, once: it moves to
// `sending` before the carrier is called, and is charged once the carrier accepted it. A rerun
// that finds it `sending` resolves it (resolveSending). A message an app would refuse (its
// person's customer-service window closed) is not sent: it fails with reason needs_template,
// and its conversation is marked as needing a template.
func (s *Service) send(ctx context.Context, c store.Channel, reply store.ChannelMessage) error {
	snd, ok := s.sender(c.Provider)
	if !ok {
		return nil
	}
	switch reply.Status {
	case "pending":
	case "sending":
		return s.resolveSending(ctx, c, snd, reply)
	default:
		return nil
	}
	if closed, err := s.windowClosed(ctx, c, snd, reply.Remote); err != nil || closed {
		if err != nil {
			return err
		}
		return s.needsTemplate(ctx, c, reply)
	}
	claimed, err := s.store.ClaimSend(ctx, c.WorkspaceID, reply.ID)
	if err != nil || !claimed {
		return err
	}
	return s.handOver(ctx, c, snd, reply)
}

// handOver calls the carrier for a message this run holds in `sending`, and records its
// answer.
func (s *Service) handOver(ctx context.Context, c store.Channel, snd Sender, reply store.ChannelMessage) error {
	var id string
	cfg, err := s.OpenConfig(c)
	if err == nil {
		id, err = snd.Send(ctx, c, cfg, reply)
	}
	return s.finish(ctx, c, reply, id, err)
}

// Reconciler is a Sender whose carrier can say whether it got a message: one whose send was cut short
// (the process died during the carrier's call, or before recording its answer).
type Reconciler interface {
	// FindSent returns the carrier's id of m if the carrier created it since since.
	FindSent(ctx context.Context, c store.Channel, cfg *Config, m store.ChannelMessage, since time.Time) (id string, found bool, err error)
}

// sendSettle is how long after its claim a message found `sending` may still be in the
// hands of the run that claimed it (its carrier call bounded by the send job's timeout): a
// rerun waits that long before it asks the carrier, so it never races a live send.
const sendSettle = 15 * time.Second

// resolveSending settles a message a rerun finds `sending`: the run that claimed it died
// between the claim and recording the carrier's answer. The carrier is asked (Reconciler)
// whether it created the message after the claim: if it did, its id is recorded and the
// message charged, as the send would have; if not, it is sent now, from the same claim.
// Either way the texter gets it once; the one gap left is a carrier that accepted a request
// cut by the crash but does not list it yet when asked (15 s after the claim at the
// earliest). A channel whose app cannot be asked fails the message with reason
// send_interrupted instead of risking a duplicate. A claim younger than sendSettle may still
// be in a live run's hands: the job is snoozed until it is old enough.
func (s *Service) resolveSending(ctx context.Context, c store.Channel, snd Sender, reply store.ChannelMessage) error {
	if wait := sendSettle - time.Since(reply.UpdatedAt); wait > 0 {
		return river.JobSnooze(wait)
	}
	rec, ok := snd.(Reconciler)
	if !ok {
		_, _, err := s.store.FinishOutbound(ctx, c.WorkspaceID, reply.ID, "sending", "failed", ptr(ReasonSendInterrupted), nil)
		return err
	}
	cfg, err := s.OpenConfig(c)
	if err != nil {
		return err
	}
	// The carrier stamps in whole seconds, on its own clock: a little slack before the claim.
	id, found, err := rec.FindSent(ctx, c, cfg, reply, reply.UpdatedAt.Add(-2*time.Second).Truncate(time.Second))
	if err != nil {
		return err // the carrier could not be asked: River tries again
	}
	if found {
		s.log.InfoContext(ctx, "a reply cut short by a crash had reached the carrier", slog.String("message", reply.ID.String()))
		return s.finish(ctx, c, reply, id, nil)
	}
	s.log.InfoContext(ctx, "sending a reply cut short by a crash", slog.String("message", reply.ID.String()))
	return s.handOver(ctx, c, snd, reply)
}

// ReasonSendInterrupted is why a message was failed after its send was cut short on a
// channel whose app cannot say whether it got it.
const ReasonSendInterrupted = "send_interrupted"

// windowClosed says whether the channel's app would refuse a free-form message to remote:
// they have not written within its customer-service window.
func (s *Service) windowClosed(ctx context.Context, c store.Channel, snd Sender, remote string) (bool, error) {
	w, ok := snd.(Windowed)
	if !ok {
		return false, nil
	}
	last, err := s.store.LastInboundFrom(ctx, c.ID, remote)
	if err != nil {
		return false, err
	}
	return time.Since(last) > w.Window(), nil
}

// needsTemplate fails a message the app would refuse, and marks its conversation. It takes
// the conversation's KEY SHARE before the message's row: a delete of the conversation locks
// it, then deletes its thread, then clears its messages' link, and the thread's mark after
// the message's row would otherwise wait for the delete while the delete waits for the row.
func (s *Service) needsTemplate(ctx context.Context, c store.Channel, m store.ChannelMessage) error {
	return s.store.InTx(ctx, func(tx *store.Tx) error {
		if m.ConversationID != nil {
			if err := tx.KeyShareConversations(ctx, []uuid.UUID{c.WorkspaceID}, []uuid.UUID{*m.ConversationID}); err != nil {
				return err
			}
		}
		if _, moved, err := tx.FinishOutbound(ctx, c.WorkspaceID, m.ID, "pending", "failed", ptr(ReasonNeedsTemplate), nil); err != nil || !moved {
			return err
		}
		if m.ConversationID == nil {
			return nil
		}
		return tx.MarkNeedsTemplate(ctx, c.WorkspaceID, *m.ConversationID)
	})
}

// ReasonNeedsTemplate is why a message to a person outside their customer-service window was
// not sent: only an approved template may reach them until they write again.
const ReasonNeedsTemplate = "needs_template"

// charge meters one message on its channel's terms.
func (s *Service) charge(ctx context.Context, tx *store.Tx, c store.Channel, m Metered) error {
	snd, ok := s.sender(c.Provider)
	if !ok {
		return nil
	}
	return snd.Charge(ctx, tx, c, m)
}

// contactStore finds contacts: the store, or a transaction.
type contactStore interface {
	ContactForPhone(ctx context.Context, workspaceID uuid.UUID, phone string) (uuid.UUID, error)
	ContactForAppUser(ctx context.Context, workspaceID uuid.UUID, u store.AppUser) (uuid.UUID, error)
}

// contactFor is the contact of a channel's remote party: by phone number on SMS, by the app's
// user id on a messaging app (found or created when the app's webhook arrived, with its name).
func contactFor(ctx context.Context, q contactStore, c store.Channel, remote string) (uuid.UUID, error) {
	if c.Provider == string(blueprint.ChannelSMS) {
		return q.ContactForPhone(ctx, c.WorkspaceID, remote)
	}
	return q.ContactForAppUser(ctx, c.WorkspaceID, store.AppUser{App: c.Provider, ID: remote})
}

// publicMessage is what is kept of a carrier's refusal: its public words, not internals.
func publicMessage(err error) string {
	if e := apierr.As(err); e != nil && e.Kind != apierr.KindInternal {
		return e.Message
	}
	return "the carrier could not be reached"
}

func ptr[T any](v T) *T { return &v }
