package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

// VoiceCall is one phone call on a telco_voice channel (package voice).
type VoiceCall = dbsqlc.VoiceCall

// VoiceTurn is one thing a caller said and the agent's answer to it.
type VoiceTurn = dbsqlc.VoiceTurn

// NewVoiceCall is a call as its first webhook tells it.
type NewVoiceCall struct {
	ChannelID uuid.UUID
	CallSID   string
	Direction string // inbound or outbound
	Remote    string
	Local     string
	AgentID   *uuid.UUID
	// An outbound call of a campaign: its conversation and campaign send, known beforehand.
	ConversationID *uuid.UUID
	CampaignSendID *uuid.UUID
}

// StartVoiceCall records a call, or finds it when its CallSid was seen already.
func (q *queries) StartVoiceCall(ctx context.Context, workspaceID uuid.UUID, c NewVoiceCall) (VoiceCall, error) {
	return q.sql.StartVoiceCall(ctx, q.db, dbsqlc.StartVoiceCallParams{WorkspaceID: workspaceID, ChannelID: c.ChannelID, CallSid: c.CallSID,
		Direction: c.Direction, Remote: c.Remote, Local: c.Local, AgentID: c.AgentID, ConversationID: c.ConversationID, CampaignSendID: c.CampaignSendID})
}

// VoiceCallBySID finds a call of the channel by the carrier's CallSid.
func (q *queries) VoiceCallBySID(ctx context.Context, workspaceID, channelID uuid.UUID, sid string) (VoiceCall, error) {
	c, err := q.sql.VoiceCallBySID(ctx, q.db, dbsqlc.VoiceCallBySIDParams{WorkspaceID: workspaceID, ChannelID: channelID, CallSid: sid})
	return c, notFound("call", err)
}

// SetVoiceCallConversation ties the call to the conversation it opened.
func (q *queries) SetVoiceCallConversation(ctx context.Context, workspaceID, id, conversationID uuid.UUID) error {
	return q.sql.SetVoiceCallConversation(ctx, q.db, dbsqlc.SetVoiceCallConversationParams{WorkspaceID: workspaceID, ID: id, ConversationID: &conversationID})
}

// SetVoiceCallOutcome records what the call flow did; the first outcome stays (a voicemail
// replaces a transfer nobody answered).
func (q *queries) SetVoiceCallOutcome(ctx context.Context, workspaceID, id uuid.UUID, outcome string) error {
	return q.sql.SetVoiceCallOutcome(ctx, q.db, dbsqlc.SetVoiceCallOutcomeParams{WorkspaceID: workspaceID, ID: id, Outcome: &outcome})
}

// CountSilentGather counts a gather that heard nothing (silent) or resets the count, and
// returns the gathers in a row that heard nothing.
func (q *queries) CountSilentGather(ctx context.Context, workspaceID, id uuid.UUID, silent bool) (int, error) {
	return q.sql.SetSilentGathers(ctx, q.db, dbsqlc.SetSilentGathersParams{WorkspaceID: workspaceID, ID: id, Silent: silent})
}

// SetVoicemail keeps the message a caller left (the carrier's recording URL and length).
func (q *queries) SetVoicemail(ctx context.Context, workspaceID, id uuid.UUID, url string, seconds int) error {
	return q.sql.SetVoicemail(ctx, q.db, dbsqlc.SetVoicemailParams{WorkspaceID: workspaceID, ID: id, VoicemailURL: &url, VoicemailS: &seconds})
}

// EndVoiceCall applies a call's final status once; ok is false when it was applied already.
func (q *queries) EndVoiceCall(ctx context.Context, workspaceID, id uuid.UUID, status string, seconds, minutes int) (VoiceCall, bool, error) {
	c, err := q.sql.EndVoiceCall(ctx, q.db, dbsqlc.EndVoiceCallParams{WorkspaceID: workspaceID, ID: id, CarrierStatus: &status,
		DurationS: &seconds, Minutes: &minutes})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// CloseCallConversation closes the conversation of a call that ended.
func (q *queries) CloseCallConversation(ctx context.Context, workspaceID, id uuid.UUID) error {
	return q.sql.CloseCallConversation(ctx, q.db, dbsqlc.CloseCallConversationParams{WorkspaceID: workspaceID, ID: id})
}

// StartVoiceTurn writes turn seq of a call once; fresh is false when it existed already.
func (q *queries) StartVoiceTurn(ctx context.Context, workspaceID, callID uuid.UUID, seq int, speech string) (fresh bool, err error) {
	_, err = q.sql.StartVoiceTurn(ctx, q.db, dbsqlc.StartVoiceTurnParams{CallID: callID, Seq: seq, WorkspaceID: workspaceID, Speech: speech})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// VoiceTurnOf reads turn seq of a call.
func (q *queries) VoiceTurnOf(ctx context.Context, workspaceID, callID uuid.UUID, seq int) (VoiceTurn, error) {
	t, err := q.sql.VoiceTurn(ctx, q.db, dbsqlc.VoiceTurnParams{WorkspaceID: workspaceID, CallID: callID, Seq: seq})
	return t, notFound("turn", err)
}

// FinishVoiceTurn stores a pending turn's answer (status answered or failed), once.
func (q *queries) FinishVoiceTurn(ctx context.Context, workspaceID, callID uuid.UUID, seq int, status string, reply, action *string) error {
	return q.sql.FinishVoiceTurn(ctx, q.db, dbsqlc.FinishVoiceTurnParams{WorkspaceID: workspaceID, CallID: callID, Seq: seq, Status: status,
		Reply: reply, Action: action})
}

// VoiceCallOfConversation is the (latest) call that carried a conversation.
func (q *queries) VoiceCallOfConversation(ctx context.Context, workspaceID, conversationID uuid.UUID) (VoiceCall, error) {
	c, err := q.sql.VoiceCallOfConversation(ctx, q.db, dbsqlc.VoiceCallOfConversationParams{WorkspaceID: workspaceID, ConversationID: &conversationID})
	return c, notFound("call", err)
}
