package manage

import (
	"context"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/invopop/jsonschema"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/store"
)

// DefaultDisclosureText is spoken on voice calls in English when an agent has no text of its
// own: a null stored text means the default, never silence. DefaultDisclosure has the others.
const DefaultDisclosureText = "Hello, you are speaking with an automated AI assistant. This call may be recorded."

// Disclosure is the AI-disclosure safeguard of an agent, as get_agent reports it.
type Disclosure struct {
	Enabled          bool    `json:"enabled"`
	Applies          bool    `json:"applies"`
	Note             string  `json:"note"`
	Mode             string  `json:"mode"` // one of DisclosureModes
	SpokenText       string  `json:"spoken_text"`
	UsingDefaultText bool    `json:"using_default_text"`
	RecordingID      *string `json:"recording_id"`
}

// AgentView is an agent in full, with the names update_agent takes.
type AgentView struct {
	ID            string                   `json:"id"`
	Name          string                   `json:"name"`
	Description   string                   `json:"description"`
	Status        string                   `json:"status"`
	Language      string                   `json:"language"`
	DisplayName   string                   `json:"displayName"`
	Tone          string                   `json:"tone"`
	Greeting      string                   `json:"greeting"`
	LLMProvider   string                   `json:"llmProvider"`
	LLMModel      string                   `json:"llmModel"`
	Temperature   float64                  `json:"temperature"`
	MaxTokens     int                      `json:"maxTokens"`
	SystemPrompt  string                   `json:"systemPrompt"`
	BusinessRules *blueprint.BusinessRules `json:"businessRules"`
	Labels        []string                 `json:"labels"`
	ToolsConfig   []blueprint.Tool         `json:"toolsConfig"`
	Channels      []blueprint.Channel      `json:"channels"`
	Deployments   []string                 `json:"deployments"`
	// InboundChannels are the connected channels whose inbound traffic the agent answers:
	// deployments alone describe no traffic (a channel may need setup, a deployment by type
	// is outbound only).
	InboundChannels       []InboundChannel `json:"inboundChannels"`
	KnowledgeSources      []SourceView     `json:"knowledgeSources"`
	DisclosureEnabled     bool             `json:"disclosureEnabled"`
	DisclosureText        *string          `json:"disclosureText"`
	DisclosureRecordingID *string          `json:"disclosureRecordingId"`
	CreatedAt             string           `json:"createdAt"`
	UpdatedAt             string           `json:"updatedAt"`
	// Warnings name valid but questionable settings, such as a model the platform does not
	// serve (the agent's turns fail with model_not_found until it is changed).
	Warnings   []string    `json:"warnings,omitempty"`
	Disclosure *Disclosure `json:"disclosure,omitempty"`
}

// InboundChannel is a connected channel whose inbound traffic an agent answers.
type InboundChannel struct {
	ChannelID string `json:"channelId"`
	Provider  string `json:"provider"`
	Name      string `json:"name"`
}

// SourceView is a knowledge source with its ingestion status.
type SourceView struct {
	ID     string  `json:"id"`
	Type   string  `json:"type"`
	URL    *string `json:"url"`
	Depth  *int    `json:"depth"`
	Status string  `json:"status"` // one of SourceStatuses
	Pages  int     `json:"pages"`
	Error  *string `json:"error"`
	// Path is the upload filename a file source names; UploadID the upload it reads (upl_…),
	// once known.
	Path     *string `json:"path"`
	UploadID *string `json:"uploadId"`
}

// GetAgentInput is get_agent's input: an id, or a name to search for.
type GetAgentInput struct {
	AgentID string `json:"agent_id,omitempty" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	Name    string `json:"name,omitempty" jsonschema:"minLength=1" jsonschema_description:"Case-insensitive name search"`
}

// JSONSchemaExtend says that get_agent needs one of its two arguments.
func (GetAgentInput) JSONSchemaExtend(s *jsonschema.Schema) {
	s.AnyOf = []*jsonschema.Schema{{Required: []string{"agent_id"}}, {Required: []string{"name"}}}
}

// GetAgentResult is get_agent's result: agent and disclosure by id; agents and total by name.
type GetAgentResult struct {
	Success    bool        `json:"success"`
	Agent      *AgentView  `json:"agent,omitempty"`
	Disclosure *Disclosure `json:"disclosure,omitempty"`
	Agents     []AgentView `json:"agents,omitempty"`
	Total      *int        `json:"total,omitempty"`
}

// GetAgent returns one agent by id (preferred), or the agents whose name contains name.
func (s *Service) GetAgent(ctx context.Context, ws uuid.UUID, in GetAgentInput) (GetAgentResult, error) {
	switch {
	case in.AgentID != "":
		a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
		if err != nil {
			return GetAgentResult{}, err
		}
		v, err := s.view(ctx, a)
		if err != nil {
			return GetAgentResult{}, err
		}
		d := v.Disclosure
		v.Disclosure = nil
		return GetAgentResult{Success: true, Agent: &v, Disclosure: d}, nil
	case strings.TrimSpace(in.Name) != "":
		list, err := s.store.AgentsNamed(ctx, ws, strings.TrimSpace(in.Name))
		if err != nil {
			return GetAgentResult{}, err
		}
		out := GetAgentResult{Success: true, Agents: []AgentView{}}
		for _, a := range list {
			v, err := s.view(ctx, a)
			if err != nil {
				return GetAgentResult{}, err
			}
			out.Agents = append(out.Agents, v)
		}
		total := len(out.Agents)
		out.Total = &total
		return out, nil
	}
	return GetAgentResult{}, apierr.Invalid("agent_id", "missing_parameter", "Give agent_id (preferred) or name.")
}

func (s *Service) view(ctx context.Context, a store.Agent) (AgentView, error) {
	bp, err := decodeBlueprint(a)
	if err != nil {
		return AgentView{}, err
	}
	deployed, err := s.store.AgentDeployments(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return AgentView{}, err
	}
	ag := bp.Agent
	v := AgentView{ID: a.ID.String(), Name: a.Name, Description: ag.Description, Status: a.Status, Language: ag.Language,
		DisplayName: ag.Persona.DisplayName, Tone: string(ag.Persona.Tone), Greeting: ag.Persona.Greeting,
		LLMProvider: string(ag.LLM.Provider), LLMModel: ag.LLM.Model, Temperature: *ag.LLM.Temperature, MaxTokens: *ag.LLM.MaxTokens,
		SystemPrompt: ag.LLM.SystemPrompt, BusinessRules: ag.BusinessRules, Labels: nonNil(ag.Labels),
		ToolsConfig: nonNilTools(ag.Tools), Channels: nonNilChannels(ag.Channels), Deployments: []string{},
		DisclosureEnabled: a.DisclosureEnabled, DisclosureText: a.DisclosureText,
		CreatedAt: rfc3339(a.CreatedAt), UpdatedAt: rfc3339(a.UpdatedAt), Warnings: blueprint.ModelWarnings(bp, s.catalog)}
	for typ := range deployed {
		v.Deployments = append(v.Deployments, typ)
	}
	sort.Strings(v.Deployments)
	seats, err := s.store.AgentInboundSeats(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return AgentView{}, err
	}
	v.InboundChannels = []InboundChannel{}
	for _, seat := range seats {
		v.InboundChannels = append(v.InboundChannels, InboundChannel{ChannelID: seat.ChannelID.String(), Provider: seat.Provider, Name: seat.Name})
	}
	sources, err := s.store.AgentSources(ctx, a.WorkspaceID, a.ID)
	if err != nil {
		return AgentView{}, err
	}
	v.KnowledgeSources = []SourceView{}
	for _, src := range sources {
		v.KnowledgeSources = append(v.KnowledgeSources, SourceView{ID: src.ID.String(), Type: src.Type, URL: src.URL,
			Depth: src.Depth, Status: src.Status, Pages: src.Pages, Error: src.Error, Path: src.Path, UploadID: src.UploadShortID})
	}
	if a.DisclosureRecordingID != nil {
		id := a.DisclosureRecordingID.String()
		v.DisclosureRecordingID = &id
	}
	d := disclosure(a, ag.Language, string(blueprint.ChannelTelcoVoice), hasVoice(bp, deployed))
	v.Disclosure = &d
	return v, nil
}

// hasVoice: the disclosure safeguard is about calls, so it applies to agents that have a
// voice channel in their blueprint or a voice deployment.
func hasVoice(bp *blueprint.Blueprint, deployed map[string]uuid.UUID) bool {
	if _, ok := deployed[string(blueprint.ChannelTelcoVoice)]; ok {
		return true
	}
	for _, c := range bp.Agent.Channels {
		if c.Type == blueprint.ChannelTelcoVoice {
			return true
		}
	}
	return false
}

// DisclosureOf is an agent's disclosure block, as get_agent reports it, from its blueprint
// and its deployments (channel type to deployment id): the agent runtime gives the
// disclosure exactly when it applies here. Its text is the one spoken on calls; DisclosureFor
// gives another channel's.
func DisclosureOf(a store.Agent, bp *blueprint.Blueprint, deployed map[string]uuid.UUID) Disclosure {
	return DisclosureFor(a, bp, deployed, string(blueprint.ChannelTelcoVoice))
}

// disclosure is the block for an agent of the given language, with the text of channel.
func disclosure(a store.Agent, language, channel string, voice bool) Disclosure {
	text, english := DefaultDisclosure(channel, language)
	d := Disclosure{Enabled: a.DisclosureEnabled, Applies: voice && a.DisclosureEnabled, Mode: DisclosureSpokenText,
		SpokenText: text, UsingDefaultText: a.DisclosureText == nil}
	if a.DisclosureText != nil {
		d.SpokenText = *a.DisclosureText
	}
	if a.DisclosureRecordingID != nil {
		id := a.DisclosureRecordingID.String()
		d.Mode, d.RecordingID = DisclosureRecording, &id
	}
	switch {
	case !voice:
		d.Note = "Text-only agent: the spoken AI disclosure does not apply."
	case !a.DisclosureEnabled:
		d.Note = "Voice agent with the disclosure safeguard switched off: callers are not told they speak with an AI."
	case d.Mode == DisclosureRecording:
		d.Note = "Calls start by playing the disclosure recording."
	case d.UsingDefaultText:
		d.Note = "Calls start with the platform's default disclosure text; chats and messages show a written one that does not mention calls."
	default:
		d.Note = "Calls start with this agent's own disclosure text."
	}
	if d.UsingDefaultText && english {
		d.Note += fallbackNote(language)
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilTools(t []blueprint.Tool) []blueprint.Tool {
	if t == nil {
		return []blueprint.Tool{}
	}
	return t
}

func nonNilChannels(c []blueprint.Channel) []blueprint.Channel {
	if c == nil {
		return []blueprint.Channel{}
	}
	return c
}
