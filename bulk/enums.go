package bulk

import (
	"switchboard/campaigns"
	"switchboard/converse"
)

// The filters' enumerated keys are typed: each type lists its values (manage.Enumerated), so
// the input schemas enumerate them without a tag repeating the list. A provider is a
// blueprint.ChannelType, a delete_campaigns status a campaigns.Status.

// ConversationStatus is delete_conversations' status key.
type ConversationStatus string

// EnumValues lists a conversation's statuses.
func (ConversationStatus) EnumValues() []string {
	return []string{converse.StatusOpen, converse.StatusEscalated, converse.StatusClosed}
}

// ConversationSource is delete_conversations' source key: who answers the conversation.
type ConversationSource string

// A conversation is the builder assistant's (/v1 and /api/chat) or a deployed agent's.
const (
	SourceAssistant ConversationSource = "assistant"
	SourceAgent     ConversationSource = "agent"
)

// EnumValues lists the sources.
func (ConversationSource) EnumValues() []string {
	return []string{string(SourceAssistant), string(SourceAgent)}
}

// ChannelStatus is delete_channels' status key.
type ChannelStatus string

// A channel is deployed while an agent is deployed on it, else unused.
const (
	ChannelDeployed ChannelStatus = "deployed"
	ChannelUnused   ChannelStatus = "unused"
)

// EnumValues lists a channel's statuses.
func (ChannelStatus) EnumValues() []string {
	return []string{string(ChannelDeployed), string(ChannelUnused)}
}

// InFlightStatus is cancel_campaigns' status key: the statuses of a campaign that can still
// be cancelled.
type InFlightStatus string

// EnumValues lists the in-flight statuses.
func (InFlightStatus) EnumValues() []string { return inFlight }

// The statuses each campaign tool touches or skips.
var (
	notRunning = []string{campaigns.Draft, campaigns.Scheduled, campaigns.Paused, campaigns.Completed, campaigns.Cancelled}
	inFlight   = []string{campaigns.Scheduled, campaigns.Running, campaigns.Paused}
	settled    = []string{campaigns.Draft, campaigns.Completed, campaigns.Cancelled}
)
