package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/invopop/jsonschema"
	"gopkg.in/yaml.v3"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/store"
)

// UpdateAgentInput is update_agent's input: the agent and the fields to change. Updates is
// decoded field by field, because a null must be told apart from an absent field and each
// error names its field; AgentUpdates describes the fields.
type UpdateAgentInput struct {
	AgentID string                     `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	Updates map[string]json.RawMessage `json:"updates"`
}

// JSONSchemaProperty gives updates the schema of AgentUpdates.
func (UpdateAgentInput) JSONSchemaProperty(prop string) any {
	if prop == "updates" {
		return AgentUpdates{}
	}
	return nil
}

// AgentUpdates is the one list of update_agent's fields. The schema of `updates` is derived
// from it; a field's blueprint tag is where it lives in the blueprint (and the path its
// validation errors are reported under), and a field without one is a column of the agent.
// A test holds the /api contract's AgentUpdates equal to it. Nothing is decoded into it.
type AgentUpdates struct {
	Name                  string           `json:"name,omitempty" blueprint:"agent.name" jsonschema:"minLength=1,maxLength=100"`
	Description           string           `json:"description,omitempty" blueprint:"agent.description" jsonschema:"maxLength=500"`
	Status                AgentStatus      `json:"status,omitempty"`
	Language              string           `json:"language,omitempty" blueprint:"agent.language" jsonschema_description:"BCP 47 language tag"`
	DisplayName           string           `json:"displayName,omitempty" blueprint:"agent.persona.display_name" jsonschema:"minLength=1,maxLength=50"`
	Tone                  blueprint.Tone   `json:"tone,omitempty" blueprint:"agent.persona.tone"`
	Greeting              string           `json:"greeting,omitempty" blueprint:"agent.persona.greeting" jsonschema:"minLength=1,maxLength=500"`
	LLMProvider           catalog.Family   `json:"llmProvider,omitempty" blueprint:"agent.llm.provider"`
	LLMModel              string           `json:"llmModel,omitempty" blueprint:"agent.llm.model" jsonschema_description:"Any model name; the platform serves the ids of the provider's family, and another name is stored with a warning"`
	Temperature           float64          `json:"temperature,omitempty" blueprint:"agent.llm.temperature" jsonschema:"minimum=0,maximum=2"`
	MaxTokens             int              `json:"maxTokens,omitempty" blueprint:"agent.llm.max_tokens" jsonschema:"minimum=1,maximum=8192"`
	SystemPrompt          string           `json:"systemPrompt,omitempty" blueprint:"agent.llm.system_prompt" jsonschema:"minLength=10,maxLength=10000"`
	BusinessRules         map[string]any   `json:"businessRules,omitempty" blueprint:"agent.business_rules" jsonschema_description:"business_rules of the blueprint"`
	Labels                []string         `json:"labels,omitempty" blueprint:"agent.labels" jsonschema:"maxItems=50"`
	ToolsConfig           []map[string]any `json:"toolsConfig,omitempty" blueprint:"agent.tools" jsonschema_description:"tools of the blueprint"`
	DisclosureEnabled     bool             `json:"disclosureEnabled,omitempty"`
	DisclosureText        *string          `json:"disclosureText,omitempty" jsonschema:"minLength=1" jsonschema_description:"null uses the platform's default text"`
	DisclosureRecordingID *string          `json:"disclosureRecordingId,omitempty" jsonschema:"format=uuid" jsonschema_description:"A recording of kind disclosure"`
}

// JSONSchemaExtend adds what the tags cannot say.
func (AgentUpdates) JSONSchemaExtend(s *jsonschema.Schema) {
	one, maxLabel, maxText := uint64(1), uint64(50), uint64(maxDisclosureText)
	s.MinProperties = &one // an update changes something
	property(s, "labels").Items.MinLength = &one
	property(s, "labels").Items.MaxLength = &maxLabel
	property(s, "disclosureText").MaxLength = &maxText
	nullable(property(s, "disclosureText")) // null: back to the platform's default text
	nullable(property(s, "disclosureRecordingId"))
}

// maxDisclosureText bounds a custom disclosure: it is spoken at the start of every call.
const maxDisclosureText = 1000

// updateFields maps each of update_agent's field names to its blueprint path, "" for a
// column of the agent.
func updateFields() map[string]string {
	t := reflect.TypeFor[AgentUpdates]()
	fields := make(map[string]string, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Tag.Get("blueprint")
	}
	return fields
}

// columnFields lists, in AgentUpdates' order, the fields that are columns of the agent.
func columnFields() []string {
	var names []string
	t := reflect.TypeFor[AgentUpdates]()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("blueprint") == "" {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			names = append(names, name)
		}
	}
	return names
}

// UpdateAgent changes the listed fields only. The changed blueprint is validated by the same
// rules as create_agent, and errors are reported under the caller's field names.
func (s *Service) UpdateAgent(ctx context.Context, ws uuid.UUID, in UpdateAgentInput) (AgentRef, error) {
	a, u, err := s.planUpdate(ctx, ws, in)
	if err != nil {
		return AgentRef{}, err
	}
	var updated store.Agent
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if updated, err = tx.UpdateAgent(ctx, ws, a.ID, u); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, ws, audit.AgentUpdated, "agent", a.ID.String(), map[string]any{"name": updated.Name, "updates": in.Updates}); err != nil {
			return err
		}
		if a.Status == string(AgentEnabled) && u.Status == string(AgentDisabled) {
			// A disabled agent runs no campaigns: its scheduled and running ones pause
			// (paused_reason agent_disabled) in the same transaction.
			_, err = tx.PauseAgentCampaigns(ctx, ws, a.ID)
		}
		return err
	})
	if err != nil {
		return AgentRef{}, apierr.WithParam(err, "agent_id")
	}
	return AgentRef{Success: true, AgentID: updated.ID.String(), AgentName: updated.Name, Warnings: s.modelWarnings(updated)}, nil
}

// modelWarnings is the warning of an agent whose llm.model the platform does not serve.
func (s *Service) modelWarnings(a store.Agent) []string {
	bp, err := decodeBlueprint(a)
	if err != nil {
		return nil // a stored blueprint always decodes; the caller has the agent already
	}
	return blueprint.ModelWarnings(bp, s.catalog)
}

// planUpdate checks an update_agent call and computes the agent's new row without writing
// it: UpdateAgent writes it, and the builder assistant describes it before parking it.
func (s *Service) planUpdate(ctx context.Context, ws uuid.UUID, in UpdateAgentInput) (store.Agent, store.AgentUpdate, error) {
	if len(in.Updates) == 0 {
		return store.Agent{}, store.AgentUpdate{}, apierr.Invalid("updates", "missing_parameter", "updates must name at least one field to change.")
	}
	fields := updateFields()
	for _, k := range sortedKeys(in.Updates) {
		if _, ok := fields[k]; !ok {
			return store.Agent{}, store.AgentUpdate{}, apierr.Invalid("updates."+k, "unknown_field", "%q cannot be updated; the fields are %s.", k, updatableList())
		}
	}
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	bp, err := decodeBlueprint(a)
	if err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	if err := applyBlueprintFields(bp, fields, in.Updates); err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	bp, err = revalidate(bp, fields, s.catalog)
	if err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	u := store.AgentUpdate{Name: bp.Agent.Name, Status: a.Status, DisclosureEnabled: a.DisclosureEnabled,
		DisclosureText: a.DisclosureText, DisclosureRecordingID: a.DisclosureRecordingID}
	if err := s.applyOtherFields(ctx, ws, &u, in.Updates); err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	if u.Blueprint, err = json.Marshal(bp); err != nil {
		return store.Agent{}, store.AgentUpdate{}, err
	}
	return a, u, nil
}

// applyBlueprintFields decodes each given blueprint field into its place in bp.
func applyBlueprintFields(bp *blueprint.Blueprint, fields map[string]string, updates map[string]json.RawMessage) error {
	for _, k := range sortedKeys(updates) {
		if fields[k] == "" {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(updates[k]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(blueprintField(bp, fields[k])); err != nil {
			return apierr.Invalid("updates."+k, "invalid_value", "%s has the wrong shape: %v", k, err)
		}
	}
	return nil
}

// revalidate runs the changed blueprint through the blueprint validator (by way of YAML, its
// input format), mapping its paths back to update_agent's field names.
func revalidate(bp *blueprint.Blueprint, fields map[string]string, cat *catalog.Catalog) (*blueprint.Blueprint, error) {
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
		field := fieldFor(fields, e.Path)
		if param == "" {
			param = "updates." + field
		}
		msgs = append(msgs, fmt.Sprintf("updates.%s: %s", field, e.Message))
	}
	return nil, &apierr.Error{Kind: apierr.KindInvalid, Param: param, Code: "invalid_value", Message: strings.Join(msgs, "\n"), Err: errs}
}

// fieldFor names the update_agent field a blueprint path belongs to: the one with the
// longest path that is path or holds it.
func fieldFor(fields map[string]string, path string) string {
	best, bestLen := path, 0
	for field, prefix := range fields {
		if prefix != "" && (path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")) && len(prefix) > bestLen {
			best, bestLen = field, len(prefix)
		}
	}
	return best
}

// applyOtherFields applies the fields that are columns of the agent, in AgentUpdates' order.
func (s *Service) applyOtherFields(ctx context.Context, ws uuid.UUID, u *store.AgentUpdate, updates map[string]json.RawMessage) error {
	for _, name := range columnFields() {
		if raw, ok := updates[name]; ok {
			if err := s.applyColumn(ctx, ws, u, name, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) applyColumn(ctx context.Context, ws uuid.UUID, u *store.AgentUpdate, name string, raw json.RawMessage) error {
	switch name {
	case "status":
		var status AgentStatus
		if err := json.Unmarshal(raw, &status); err != nil || !slices.Contains(AgentStatuses(), status) {
			return apierr.Invalid("updates.status", "invalid_value", "status must be %s.", statusList())
		}
		u.Status = string(status)
	case "disclosureEnabled":
		if err := json.Unmarshal(raw, &u.DisclosureEnabled); err != nil {
			return apierr.Invalid("updates.disclosureEnabled", "invalid_value", "disclosureEnabled must be true or false.")
		}
	case "disclosureText":
		var text *string
		if err := json.Unmarshal(raw, &text); err != nil || (text != nil && (strings.TrimSpace(*text) == "" || len([]rune(*text)) > maxDisclosureText)) {
			return apierr.Invalid("updates.disclosureText", "invalid_value",
				"disclosureText must be 1 to %d characters, or null for the platform's default text.", maxDisclosureText)
		}
		u.DisclosureText = text
	case "disclosureRecordingId":
		id, err := s.disclosureRecording(ctx, ws, raw)
		if err != nil {
			return err
		}
		u.DisclosureRecordingID = id
	default:
		// A field added to AgentUpdates without a blueprint tag needs its case here.
		return fmt.Errorf("update_agent: field %s has no column", name)
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
	if kind != RecordingDisclosure {
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
	for k := range updateFields() {
		all = append(all, k)
	}
	sort.Strings(all)
	return strings.Join(all, ", ")
}

// blueprintField returns a pointer to the field of bp at a YAML path (agent.persona.tone),
// allocating the structs on the way.
func blueprintField(bp *blueprint.Blueprint, path string) any {
	v := reflect.ValueOf(bp).Elem()
	for _, key := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.FieldByIndex(yamlField(v.Type(), key).Index)
	}
	return v.Addr().Interface()
}

func yamlField(t reflect.Type, key string) reflect.StructField {
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
			return t.Field(i)
		}
	}
	panic("blueprint has no field " + key + " in " + t.Name()) // a wrong blueprint tag; the update tests catch it
}
