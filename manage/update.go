package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/store"
)

// UpdateAgentInput is update_agent's input: the agent and the fields to change.
type UpdateAgentInput struct {
	AgentID string                     `json:"agent_id"`
	Updates map[string]json.RawMessage `json:"updates"`
}

// maxDisclosureText bounds a custom disclosure: it is spoken at the start of every call.
const maxDisclosureText = 1000

// blueprintFields maps update_agent's field names to where they live in the blueprint, so a
// blueprint validation error can be reported under the name the caller used.
var blueprintFields = map[string]string{
	"name": "agent.name", "description": "agent.description", "language": "agent.language",
	"displayName": "agent.persona.display_name", "tone": "agent.persona.tone", "greeting": "agent.persona.greeting",
	"llmProvider": "agent.llm.provider", "llmModel": "agent.llm.model", "temperature": "agent.llm.temperature",
	"maxTokens": "agent.llm.max_tokens", "systemPrompt": "agent.llm.system_prompt",
	"businessRules": "agent.business_rules", "labels": "agent.labels", "toolsConfig": "agent.tools",
}

var otherFields = map[string]bool{"status": true, "disclosureEnabled": true, "disclosureText": true, "disclosureRecordingId": true}

// UpdateAgent changes the listed fields only. The changed blueprint is validated by the same
// rules as create_agent, and errors are reported under the caller's field names.
func (s *Service) UpdateAgent(ctx context.Context, ws uuid.UUID, in UpdateAgentInput) (AgentRef, error) {
	if len(in.Updates) == 0 {
		return AgentRef{}, apierr.Invalid("updates", "missing_parameter", "updates must name at least one field to change.")
	}
	for _, k := range sortedKeys(in.Updates) {
		if _, ok := blueprintFields[k]; !ok && !otherFields[k] {
			return AgentRef{}, apierr.Invalid("updates."+k, "unknown_field", "%q cannot be updated; the fields are %s.", k, updatableList())
		}
	}
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return AgentRef{}, err
	}
	bp, err := decodeBlueprint(a)
	if err != nil {
		return AgentRef{}, err
	}
	if err := applyBlueprintFields(bp, in.Updates); err != nil {
		return AgentRef{}, err
	}
	bp, err = revalidate(bp, s.catalog)
	if err != nil {
		return AgentRef{}, err
	}
	u := store.AgentUpdate{Name: bp.Agent.Name, Status: a.Status, DisclosureEnabled: a.DisclosureEnabled,
		DisclosureText: a.DisclosureText, DisclosureRecordingID: a.DisclosureRecordingID}
	if err := s.applyOtherFields(ctx, ws, &u, in.Updates); err != nil {
		return AgentRef{}, err
	}
	if u.Blueprint, err = json.Marshal(bp); err != nil {
		return AgentRef{}, err
	}
	updated, err := s.store.UpdateAgent(ctx, ws, a.ID, u)
	if errors.Is(err, store.ErrNotFound) {
		return AgentRef{}, agentNotFound(in.AgentID)
	}
	if err != nil {
		return AgentRef{}, err
	}
	return AgentRef{Success: true, AgentID: updated.ID.String(), AgentName: updated.Name}, nil
}

func applyBlueprintFields(bp *blueprint.Blueprint, updates map[string]json.RawMessage) error {
	ag := &bp.Agent
	targets := map[string]any{
		"name": &ag.Name, "description": &ag.Description, "language": &ag.Language,
		"displayName": &ag.Persona.DisplayName, "tone": &ag.Persona.Tone, "greeting": &ag.Persona.Greeting,
		"llmProvider": &ag.LLM.Provider, "llmModel": &ag.LLM.Model, "temperature": &ag.LLM.Temperature,
		"maxTokens": &ag.LLM.MaxTokens, "systemPrompt": &ag.LLM.SystemPrompt,
		"businessRules": &ag.BusinessRules, "labels": &ag.Labels, "toolsConfig": &ag.Tools,
	}
	for _, k := range sortedKeys(updates) {
		target, ok := targets[k]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(updates[k]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(target); err != nil {
			return apierr.Invalid("updates."+k, "invalid_value", "%s has the wrong shape: %v", k, err)
		}
	}
	return nil
}

// revalidate runs the changed blueprint through the blueprint validator (by way of YAML, its
// input format), mapping its paths back to update_agent's field names.
func revalidate(bp *blueprint.Blueprint, cat *catalog.Catalog) (*blueprint.Blueprint, error) {
	raw, err := yaml.Marshal(bp)
	if err != nil {
		return nil, err
	}
	checked, err := blueprint.Parse(raw, cat)
	if err == nil {
		return checked, nil
	}
	var errs blueprint.Errors
	if !errors.As(err, &errs) {
		return nil, err
	}
	var msgs []string
	param := ""
	for _, e := range errs {
		field := fieldFor(e.Path)
		if param == "" {
			param = "updates." + field
		}
		msgs = append(msgs, fmt.Sprintf("updates.%s: %s", field, e.Message))
	}
	return nil, &apierr.Error{Kind: apierr.KindInvalid, Param: param, Code: "invalid_value", Message: strings.Join(msgs, "\n"), Err: errs}
}

func fieldFor(path string) string {
	best, bestLen := path, 0
	for field, prefix := range blueprintFields {
		if (path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")) && len(prefix) > bestLen {
			best, bestLen = field, len(prefix)
		}
	}
	return best
}

func (s *Service) applyOtherFields(ctx context.Context, ws uuid.UUID, u *store.AgentUpdate, updates map[string]json.RawMessage) error {
	if raw, ok := updates["status"]; ok {
		if err := json.Unmarshal(raw, &u.Status); err != nil || (u.Status != "enabled" && u.Status != "disabled") {
			return apierr.Invalid("updates.status", "invalid_value", "status must be enabled or disabled.")
		}
	}
	if raw, ok := updates["disclosureEnabled"]; ok {
		if err := json.Unmarshal(raw, &u.DisclosureEnabled); err != nil {
			return apierr.Invalid("updates.disclosureEnabled", "invalid_value", "disclosureEnabled must be true or false.")
		}
	}
	if raw, ok := updates["disclosureText"]; ok {
		var text *string
		if err := json.Unmarshal(raw, &text); err != nil || (text != nil && (strings.TrimSpace(*text) == "" || len([]rune(*text)) > maxDisclosureText)) {
			return apierr.Invalid("updates.disclosureText", "invalid_value",
				"disclosureText must be 1 to %d characters, or null for the platform's default text.", maxDisclosureText)
		}
		u.DisclosureText = text
	}
	if raw, ok := updates["disclosureRecordingId"]; ok {
		id, err := s.disclosureRecording(ctx, ws, raw)
		if err != nil {
			return err
		}
		u.DisclosureRecordingID = id
	}
	return nil
}

// disclosureRecording accepts null or a recording of this workspace of kind `disclosure`.
func (s *Service) disclosureRecording(ctx context.Context, ws uuid.UUID, raw json.RawMessage) (*uuid.UUID, error) {
	const param = "updates.disclosureRecordingId"
	var ref *string
	if err := json.Unmarshal(raw, &ref); err != nil {
		return nil, apierr.Invalid(param, "invalid_value", "disclosureRecordingId must be a recording id or null.")
	}
	if ref == nil {
		return nil, nil
	}
	id, err := parseID(param, *ref)
	if err != nil {
		return nil, err
	}
	kind, err := s.store.RecordingKind(ctx, ws, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.Invalid(param, "recording_not_found", "No recording %s in this workspace.", *ref)
	}
	if err != nil {
		return nil, err
	}
	if kind != "disclosure" {
		return nil, apierr.Invalid(param, "wrong_recording_kind", "Recording %s is a %s clip; the disclosure needs a recording of kind disclosure.", *ref, kind)
	}
	return &id, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func updatableList() string {
	var all []string
	for k := range blueprintFields {
		all = append(all, k)
	}
	for k := range otherFields {
		all = append(all, k)
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}
