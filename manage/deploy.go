package manage

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/blueprint"
	"switchboard/store"
)

// DeployAgentInput is deploy_agent's input.
type DeployAgentInput struct {
	AgentID         string                `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	Channel         blueprint.ChannelType `json:"channel,omitempty"`
	Config          json.RawMessage       `json:"config,omitempty" jsonschema_description:"Opaque per-deployment settings; stored, never used for routing"`
	ChannelID       string                `json:"channel_id,omitempty" jsonschema:"format=uuid" jsonschema_description:"A channel of the workspace"`
	TakeOverInbound bool                  `json:"take_over_inbound,omitempty" jsonschema:"default=false" jsonschema_description:"Move the channel's inbound seat to this agent; needs channel_id and refuses the legacy channel parameter"`
}

// DeployAgentResult is deploy_agent's result.
type DeployAgentResult struct {
	Success         bool    `json:"success"`
	DeploymentID    string  `json:"deploymentId"`
	Channel         string  `json:"channel"`
	Message         string  `json:"message"`
	ChannelName     *string `json:"channelName,omitempty"`
	Inbound         *bool   `json:"inbound,omitempty"`
	Note            *string `json:"note,omitempty"`
	ReplacedAgentID *string `json:"replacedAgentId,omitempty"`
}

// DeployAgent deploys an agent to a channel type, or to a channel row with the inbound-seat
// rules. `config` is stored as given and never decides routing.
func (s *Service) DeployAgent(ctx context.Context, ws uuid.UUID, in DeployAgentInput) (DeployAgentResult, error) {
	plan, err := s.planDeploy(ctx, ws, in)
	if err != nil {
		return DeployAgentResult{}, err
	}
	a, d := plan.agent, plan.deploy
	var dep store.Deployment
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if dep, err = tx.DeployAgent(ctx, ws, d); err != nil {
			return err
		}
		return audit.Record(ctx, tx, ws, audit.AgentDeployed, "agent", a.ID.String(), map[string]any{"name": a.Name,
			"deployment_id": dep.ID, "channel": dep.ChannelType, "channel_name": dep.ChannelName, "inbound": dep.Inbound})
	})
	if errors.Is(err, store.ErrChannelNotConnected) {
		return DeployAgentResult{}, notConnected(plan.channel.Name, plan.channel.Provider, plan.channel.Setup)
	}
	if err != nil {
		return DeployAgentResult{}, apierr.WithParam(err, "channel_id")
	}
	return s.deployResult(a, dep, d.ChannelID != nil), nil
}

func (s *Service) channel(ctx context.Context, ws uuid.UUID, ref string) (store.Channel, error) {
	id, err := parseID("channel_id", ref)
	if err != nil {
		return store.Channel{}, err
	}
	ch, err := s.store.ChannelByID(ctx, ws, id)
	return ch, apierr.WithParam(err, "channel_id")
}

func (s *Service) deployResult(a store.Agent, dep store.Deployment, withRow bool) DeployAgentResult {
	out := DeployAgentResult{Success: true, DeploymentID: dep.ID.String(), Channel: dep.ChannelType}
	if !withRow {
		out.Message = a.Name + " is deployed to " + dep.ChannelType + "."
		if dep.ChannelType != string(blueprint.ChannelWebchat) {
			out.Message = a.Name + " is deployed to " + dep.ChannelType + " for outbound messages (campaigns) only."
			n := "A deployment by channel type answers no inbound traffic: deploy with channel_id (a connected " + dep.ChannelType +
				" channel of GET /api/channels) to answer what arrives on it."
			out.Note = &n
		}
		return out
	}
	out.ChannelName, out.Inbound = &dep.ChannelName, &dep.Inbound
	var note *string
	switch {
	case dep.Replaced != nil:
		replaced := dep.Replaced.String()
		out.ReplacedAgentID = &replaced
		out.Message = a.Name + " now answers inbound traffic on " + dep.ChannelName + "; the previous agent stays deployed for outbound."
	case dep.Inbound:
		out.Message = a.Name + " answers inbound traffic on " + dep.ChannelName + "."
	default:
		out.Message = a.Name + " is deployed to " + dep.ChannelName + " for outbound only."
		n := "Another agent holds the inbound seat of this channel; pass take_over_inbound: true to move it."
		note = &n
	}
	out.Note = note
	return out
}

// TestLinkInput is generate_test_link's input.
type TestLinkInput struct {
	AgentID string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
}

// TestLinkResult is generate_test_link's result.
type TestLinkResult struct {
	Success   bool    `json:"success"`
	TestURL   string  `json:"testUrl"`
	EmbedURL  *string `json:"embedUrl"`
	AgentName string  `json:"agentName"`
	Note      string  `json:"note"`
}

// GenerateTestLink returns the agent's test page and, once it is deployed to webchat, the
// embed script of that deployment. Both are served by this server.
func (s *Service) GenerateTestLink(ctx context.Context, ws uuid.UUID, in TestLinkInput) (TestLinkResult, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return TestLinkResult{}, err
	}
	deployed, err := s.store.AgentDeployments(ctx, ws, a.ID)
	if err != nil {
		return TestLinkResult{}, err
	}
	out := TestLinkResult{Success: true, TestURL: s.testURL(a.ID), AgentName: a.Name,
		Note: "No webchat deployment yet: deploy the agent to webchat to get an embed script."}
	if id, ok := deployed[string(blueprint.ChannelWebchat)]; ok {
		embed := s.embedURL(id)
		out.EmbedURL = &embed
		out.Note = "Add " + EmbedSnippet(embed) + " to a page to show the chat widget."
	}
	if a.Status != string(AgentEnabled) {
		out.Note = "The agent is disabled: the test page shows it but it does not reply. " + out.Note
	}
	return out, nil
}

// ConversationsInput is get_conversations' input.
type ConversationsInput struct {
	AgentID        string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	ConversationID string `json:"conversation_id,omitempty" jsonschema:"minLength=1" jsonschema_description:"One conversation of the agent (its mc- id) to return in detail, with its contact, escalation and messages."`
	Limit          *int   `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=20"`
}

// ConversationItem is a conversation as get_conversations lists it.
type ConversationItem struct {
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Channel   string   `json:"channel"`
	Labels    []string `json:"labels"`
	CreatedAt string   `json:"createdAt"`
	// The detail, given when conversation_id asks for one conversation.
	Contact     *ContactView      `json:"contact,omitempty"`
	Escalation  *EscalationView   `json:"escalation,omitempty"`
	DisclosedAt *string           `json:"disclosedAt,omitempty"`
	Messages    []TranscriptEntry `json:"messages,omitempty"`
}

// ContactView is what is known of the person in a conversation.
type ContactView struct {
	ID    string  `json:"id"`
	Name  *string `json:"name"`
	Email *string `json:"email"`
	Phone *string `json:"phone"`
}

// EscalationView is the escalation a conversation went through.
type EscalationView struct {
	Trigger          string  `json:"trigger"`
	Action           string  `json:"action"`
	EscalatedAt      string  `json:"escalatedAt"`
	PickupTimedOutAt *string `json:"pickupTimedOutAt"`
}

// TranscriptEntry is one message of a conversation as a person reads it (the greeting first;
// tool traffic left out).
type TranscriptEntry struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	CreatedAt string `json:"createdAt"`
}

// ConversationsResult is get_conversations' result.
type ConversationsResult struct {
	Success       bool               `json:"success"`
	Conversations []ConversationItem `json:"conversations"`
	Total         int                `json:"total"`
}

// GetConversations lists an agent's most recent conversations; total counts all of them.
func (s *Service) GetConversations(ctx context.Context, ws uuid.UUID, in ConversationsInput) (ConversationsResult, error) {
	limit := 20
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 1 || limit > 100 {
		return ConversationsResult{}, apierr.Invalid("limit", "invalid_value", "limit must be between 1 and 100.")
	}
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return ConversationsResult{}, err
	}
	if in.ConversationID != "" {
		item, err := s.conversationDetail(ctx, a, in.ConversationID)
		if err != nil {
			return ConversationsResult{}, err
		}
		return ConversationsResult{Success: true, Conversations: []ConversationItem{item}, Total: 1}, nil
	}
	list, total, err := s.store.AgentConversations(ctx, ws, a.ID, limit)
	if err != nil {
		return ConversationsResult{}, err
	}
	out := ConversationsResult{Success: true, Conversations: []ConversationItem{}, Total: total}
	for _, c := range list {
		out.Conversations = append(out.Conversations, ConversationItem{ID: c.ID, Status: c.Status, Channel: c.Channel, Labels: nonNil(c.Labels), CreatedAt: rfc3339(c.CreatedAt)})
	}
	return out, nil
}

// conversationDetail is one conversation of the agent with its contact, escalation and
// transcript; a conversation of another agent is not found.
func (s *Service) conversationDetail(ctx context.Context, a store.Agent, ref string) (ConversationItem, error) {
	notFound := apierr.NotFound("conversation_id", "conversation_not_found", "The agent has no conversation %q.", ref)
	c, err := s.store.ConversationByRef(ctx, a.WorkspaceID, ref)
	if errors.Is(err, store.ErrNotFound) {
		return ConversationItem{}, notFound
	}
	if err != nil {
		return ConversationItem{}, err
	}
	conv, err := s.store.AgentConversationState(ctx, a.WorkspaceID, c.ID)
	if err != nil {
		return ConversationItem{}, err
	}
	if conv.AgentID == nil || *conv.AgentID != a.ID {
		return ConversationItem{}, notFound
	}
	lines, err := s.store.Transcript(ctx, a.WorkspaceID, c.ID)
	if err != nil {
		return ConversationItem{}, err
	}
	item := ConversationItem{ID: conv.ShortID, Status: conv.Status, Channel: conv.Channel, Labels: nonNil(conv.Labels),
		CreatedAt: rfc3339(conv.CreatedAt), Messages: []TranscriptEntry{}}
	if conv.ContactID != nil {
		item.Contact = &ContactView{ID: conv.ContactID.String(), Name: conv.Contact.Name, Email: conv.Contact.Email, Phone: conv.Contact.Phone}
	}
	if conv.EscalationTrigger != nil && conv.EscalatedAt != nil {
		item.Escalation = &EscalationView{Trigger: *conv.EscalationTrigger, EscalatedAt: rfc3339(*conv.EscalatedAt)}
		if conv.EscalationAction != nil {
			item.Escalation.Action = *conv.EscalationAction
		}
		if conv.PickupTimedOutAt != nil {
			at := rfc3339(*conv.PickupTimedOutAt)
			item.Escalation.PickupTimedOutAt = &at
		}
	}
	if conv.DisclosedAt != nil {
		at := rfc3339(*conv.DisclosedAt)
		item.DisclosedAt = &at
	}
	for _, l := range lines {
		item.Messages = append(item.Messages, TranscriptEntry{Role: l.Role, Content: l.Content, CreatedAt: rfc3339(l.CreatedAt)})
	}
	return item, nil
}

// AnalyticsInput is get_analytics' input.
type AnalyticsInput struct {
	AgentID string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
}

// AnalyticsResult is get_analytics' result.
type AnalyticsResult struct {
	Success            bool           `json:"success"`
	AgentID            string         `json:"agentId"`
	AgentName          string         `json:"agentName"`
	TotalConversations int            `json:"totalConversations"`
	LabelCounts        map[string]int `json:"labelCounts"`
}

// GetAnalytics counts an agent's conversations and their labels.
func (s *Service) GetAnalytics(ctx context.Context, ws uuid.UUID, in AnalyticsInput) (AnalyticsResult, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return AnalyticsResult{}, err
	}
	total, counts, err := s.store.AgentLabelCounts(ctx, ws, a.ID)
	if err != nil {
		return AnalyticsResult{}, err
	}
	return AnalyticsResult{Success: true, AgentID: a.ID.String(), AgentName: a.Name, TotalConversations: total, LabelCounts: counts}, nil
}

// channelList is the channel types as an error message lists them.
func channelList() string { return strings.Join(blueprint.Strings(blueprint.ChannelTypes()), ", ") }

// deployPlan is a checked deploy_agent call: the agent and the deployment to write.
type deployPlan struct {
	agent   store.Agent
	channel *store.Channel
	deploy  store.Deploy
}

// planDeploy checks a deploy_agent call without writing anything: DeployAgent runs it, and
// the builder assistant describes it before parking it for confirmation.
func (s *Service) planDeploy(ctx context.Context, ws uuid.UUID, in DeployAgentInput) (deployPlan, error) {
	if in.TakeOverInbound && in.ChannelID == "" {
		return deployPlan{}, apierr.Invalid("take_over_inbound", "channel_id_required",
			"take_over_inbound needs channel_id: the channel parameter names a kind of channel, not a channel whose inbound seat can be taken.")
	}
	// The spec rejects the legacy parameter with take_over_inbound always, even when it agrees
	// with the channel row: a caller mixing the two has not decided which one names the seat.
	if in.TakeOverInbound && in.Channel != "" {
		return deployPlan{}, apierr.Invalid("channel", "channel_not_allowed",
			"channel is the legacy parameter and is rejected with take_over_inbound: give channel_id alone to name the channel whose inbound seat moves.")
	}
	if in.ChannelID == "" && in.Channel == "" {
		return deployPlan{}, apierr.Invalid("channel", "missing_parameter", "Give channel_id (a channel of the workspace) or channel (a channel type).")
	}
	if in.Channel != "" && !slices.Contains(blueprint.ChannelTypes(), in.Channel) {
		return deployPlan{}, apierr.Invalid("channel", "invalid_value", "channel must be one of %s.", channelList())
	}
	config := in.Config
	if len(config) == 0 || string(config) == "null" {
		config = json.RawMessage(`{}`)
	} else if config[0] != '{' {
		return deployPlan{}, apierr.Invalid("config", "invalid_value", "config must be a JSON object.")
	}
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return deployPlan{}, err
	}
	if a.Status != string(AgentEnabled) {
		return deployPlan{}, apierr.Conflict("agent_disabled", "The agent is disabled: enable it with update_agent before deploying it.")
	}
	plan := deployPlan{agent: a, deploy: store.Deploy{AgentID: a.ID, ChannelType: string(in.Channel), TakeOver: in.TakeOverInbound, Config: config}}
	if in.ChannelID != "" {
		ch, err := s.channel(ctx, ws, in.ChannelID)
		if err != nil {
			return deployPlan{}, err
		}
		if in.Channel != "" && string(in.Channel) != ch.Provider {
			return deployPlan{}, apierr.Invalid("channel", "channel_mismatch", "channel says %s but channel %s is a %s channel.", in.Channel, in.ChannelID, ch.Provider)
		}
		if ch.Status != store.ChannelConnected {
			return deployPlan{}, notConnected(ch.Name, ch.Provider, ch.Setup)
		}
		plan.channel, plan.deploy.ChannelID = &ch, &ch.ID
		return plan, nil
	}
	if in.Channel != blueprint.ChannelWebchat {
		n, err := s.store.ConnectedChannels(ctx, ws, string(in.Channel))
		if err != nil {
			return deployPlan{}, err
		}
		if n == 0 {
			return deployPlan{}, notConnected("", string(in.Channel), nil)
		}
	}
	return plan, nil
}

// notConnected refuses a deployment that could carry no traffic: to a channel that needs
// setup (name given), or to a channel type of which the workspace has no connected channel.
func notConnected(name, provider string, setup *string) *apierr.Error {
	var e *apierr.Error
	if name != "" {
		why := ""
		if setup != nil {
			why = " " + *setup
		}
		e = apierr.Conflict("channel_not_connected", "The channel %q is not connected, so nothing can reach an agent on it.%s", name, why)
	} else {
		e = apierr.Conflict("channel_not_connected", "The workspace has no connected %s channel, so nothing can reach an agent deployed to %s.", provider, provider)
	}
	e.Param = "channel_id"
	if name == "" {
		e.Param = "channel"
	}
	e.Hint = "Connect one with POST /api/channels (provider " + provider + "), check its status with GET /api/channels, then deploy with its channel_id."
	return e
}
