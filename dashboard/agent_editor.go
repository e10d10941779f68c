package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// blueprintEditor is the agent page's editor: the YAML, its line numbers, and what the last
// Validate or Save found.
type blueprintEditor struct {
	YAML     string
	Lines    []int
	Bad      map[int]bool // the lines a problem is at, marked in the gutter
	Rows     int
	Problems []blueprint.Error // as create_agent reports them: path, line, message
	Valid    bool              // Validate found nothing wrong
	Failure  string            // a refusal that is not about one line (update_agent's)
}

// number fills the gutter: one number per line of the text.
func (e *blueprintEditor) number() {
	n := strings.Count(e.YAML, "\n") + 1
	if strings.HasSuffix(e.YAML, "\n") {
		n--
	}
	e.Lines = make([]int, max(n, 1))
	for i := range e.Lines {
		e.Lines[i] = i + 1
	}
	e.Rows = min(max(n+1, 10), 40)
	e.Bad = map[int]bool{}
	for _, p := range e.Problems {
		e.Bad[p.Line] = true
	}
}

// blueprintYAML is the agent's stored blueprint written as YAML, as create_agent takes it.
func (h *dash) blueprintYAML(r *http.Request, p store.Principal, id string) (string, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return "", &store.NotFoundError{What: "agent"}
	}
	a, err := h.Store.AgentByID(r.Context(), p.WorkspaceID, uid)
	if err != nil {
		return "", err
	}
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(bp); err != nil {
		return "", err
	}
	return b.String(), enc.Close()
}

// saveBlueprint validates the editor's text (button Validate) or saves it (button Save): the
// blueprint is checked by the rules of create_agent, each error shown at its path and line,
// and a valid one is saved through update_agent, field by field. Knowledge sources and
// channels are not fields update_agent changes: the page's own sections change them.
func (h *dash) saveBlueprint(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id := r.PathValue("id")
	d, err := h.agentPage(r, p, id)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d.Editor.YAML = strings.ReplaceAll(r.PostFormValue("yaml"), "\r\n", "\n")
	bp, err := blueprint.Parse([]byte(d.Editor.YAML), h.Catalog)
	var errs blueprint.Errors
	switch {
	case errors.As(err, &errs):
		d.Editor.Problems = errs
	case err != nil:
		d.Editor.Problems = []blueprint.Error{{Message: err.Error()}}
	}
	if len(d.Editor.Problems) > 0 {
		h.renderAgent(w, r, p, http.StatusBadRequest, d)
		return
	}
	if r.PostFormValue("action") != "save" {
		d.Editor.Valid = true
		h.renderAgent(w, r, p, http.StatusOK, d)
		return
	}
	ref, err := h.Ops.UpdateAgent(r.Context(), p.WorkspaceID, manage.UpdateAgentInput{AgentID: id, Updates: blueprintUpdates(bp)})
	if e := apierr.As(err); e != nil && e.Kind != apierr.KindInternal {
		d.Editor.Failure = e.Message
		h.renderAgent(w, r, p, e.Status(), d)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	msg := "The blueprint of " + ref.AgentName + " is saved."
	if h.sourcesOrChannelsDiffer(d.Agent, bp) {
		msg += " Its knowledge sources and channels did not change: re-crawl and deploy in their sections below."
	}
	h.flash(w, r, Prefix+"/agents/"+id, msg)
}

// blueprintUpdates are update_agent's fields with the blueprint's values.
func blueprintUpdates(bp *blueprint.Blueprint) map[string]json.RawMessage {
	a := bp.Agent
	labels, tools := a.Labels, a.Tools
	if labels == nil {
		labels = []string{}
	}
	if tools == nil {
		tools = []blueprint.Tool{}
	}
	fields := map[string]any{"name": a.Name, "description": a.Description, "language": a.Language,
		"displayName": a.Persona.DisplayName, "tone": a.Persona.Tone, "greeting": a.Persona.Greeting,
		"llmProvider": a.LLM.Provider, "llmModel": a.LLM.Model, "temperature": a.LLM.Temperature,
		"maxTokens": a.LLM.MaxTokens, "systemPrompt": a.LLM.SystemPrompt, "labels": labels, "toolsConfig": tools}
	if a.BusinessRules != nil {
		fields["businessRules"] = a.BusinessRules
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		out[k], _ = json.Marshal(v)
	}
	return out
}

// sourcesOrChannelsDiffer tells whether the saved text changed what Save leaves alone.
func (h *dash) sourcesOrChannelsDiffer(a *manage.AgentView, bp *blueprint.Blueprint) bool {
	var sources []blueprint.Source
	if bp.Agent.KnowledgeBase != nil {
		sources = bp.Agent.KnowledgeBase.Sources
	}
	return len(sources) != len(a.KnowledgeSources) || !reflect.DeepEqual(nilIfEmpty(bp.Agent.Channels), nilIfEmpty(a.Channels))
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
