package dashboard

import (
	"encoding/json"
	"errors"
	"net/http"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/store"
	"switchboard/workflows"
)

// The Workflows page: the workspace's workflows with their trigger and an on/off switch, a
// form to add one from its YAML; a workflow's page with its document in an editor (every
// validation error listed with its path and line) and its recent runs; a run's timeline
// (each step's status, attempts, output, error and timing) with a Cancel button while it is
// live. Everyone signed in reads them; changing anything takes agents.write, as on /api.

func (h *dash) routeWorkflows(mux *http.ServeMux) {
	if h.Workflows == nil {
		return
	}
	mux.HandleFunc("GET "+Prefix+"/workflows", h.signed(access.Read, h.workflowsPage))
	mux.HandleFunc("POST "+Prefix+"/workflows", h.signed(access.AgentsWrite, h.createWorkflow))
	mux.HandleFunc("GET "+Prefix+"/workflows/{id}", h.signed(access.Read, h.workflowPage))
	mux.HandleFunc("POST "+Prefix+"/workflows/{id}", h.signed(access.AgentsWrite, h.saveWorkflow))
	mux.HandleFunc("POST "+Prefix+"/workflows/{id}/enabled", h.signed(access.AgentsWrite, h.switchWorkflow))
	mux.HandleFunc("POST "+Prefix+"/workflows/{id}/run", h.signed(access.AgentsWrite, h.runWorkflow))
	mux.HandleFunc("GET "+Prefix+"/runs/{id}", h.signed(access.Read, h.runPage))
	mux.HandleFunc("POST "+Prefix+"/runs/{id}/cancel", h.signed(access.AgentsWrite, h.cancelRun))
}

// newWorkflowDoc is the create form's starting document.
const newWorkflowDoc = `name: My workflow
trigger:
  type: event
  event: turn.completed
  condition: event.data.finish_reason == "stop"
steps:
  - id: notify
    type: http_request
    url: https://example.com/hooks/switchboard
    body: '{{ to_json(event.data) }}'
`

// docForm is a document being written and what was wrong with it.
type docForm struct {
	Document string
	Problems []workflows.Error // the document's errors, with path and line
	Error    string            // another refusal (a name already used)
}

type workflowsData struct {
	Workflows []workflows.View
	Form      docForm
}

type workflowData struct {
	Workflow workflows.View
	Form     docForm
	Runs     []workflows.RunView
}

// formOf turns a refusal into what the form shows.
func formOf(doc string, err error) (docForm, int, bool) {
	f := docForm{Document: doc}
	var problems workflows.Errors
	if errors.As(err, &problems) {
		f.Problems = problems
	}
	e := apierr.As(err)
	if e == nil {
		return f, 0, false
	}
	if f.Problems == nil {
		f.Error = e.Message
	}
	return f, e.Status(), true
}

func (h *dash) workflowsPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	h.renderWorkflows(w, r, p, http.StatusOK, docForm{Document: newWorkflowDoc})
}

func (h *dash) renderWorkflows(w http.ResponseWriter, r *http.Request, p store.Principal, status int, f docForm) {
	list, err := h.Workflows.List(r.Context(), p.WorkspaceID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.render(w, r, status, "workflows", view{Title: "Workflows", Nav: "workflows", P: p, Data: workflowsData{Workflows: list.Data, Form: f}})
}

func (h *dash) createWorkflow(w http.ResponseWriter, r *http.Request, p store.Principal) {
	doc := r.PostFormValue("document")
	v, err := h.Workflows.Create(r.Context(), p.WorkspaceID, workflows.Input{Document: &doc})
	if f, status, ok := formOf(doc, err); ok {
		h.renderWorkflows(w, r, p, status, f)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/workflows/"+v.ID, "The workflow "+v.Name+" is saved"+onOff(v.Enabled)+".")
}

func onOff(enabled bool) string {
	if enabled {
		return " and on"
	}
	return ", off"
}

func (h *dash) workflowPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	h.renderWorkflow(w, r, p, http.StatusOK, nil)
}

// renderWorkflow shows a workflow; f, when set, is the editor's refused document.
func (h *dash) renderWorkflow(w http.ResponseWriter, r *http.Request, p store.Principal, status int, f *docForm) {
	ctx := r.Context()
	v, err := h.Workflows.Get(ctx, p.WorkspaceID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	runs, err := h.Workflows.Runs(ctx, p.WorkspaceID, v.ID)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := workflowData{Workflow: v, Form: docForm{Document: v.Document}, Runs: runs.Data}
	if f != nil {
		d.Form = *f
	}
	h.render(w, r, status, "workflow", view{Title: v.Name, Nav: "workflows", P: p, Data: d})
}

func (h *dash) saveWorkflow(w http.ResponseWriter, r *http.Request, p store.Principal) {
	doc := r.PostFormValue("document")
	v, err := h.Workflows.Update(r.Context(), p.WorkspaceID, r.PathValue("id"), workflows.Input{Document: &doc})
	var nf *store.NotFoundError
	if f, status, ok := formOf(doc, err); ok && !errors.As(err, &nf) {
		h.renderWorkflow(w, r, p, status, &f)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/workflows/"+v.ID, "The workflow "+v.Name+" is saved"+onOff(v.Enabled)+".")
}

func (h *dash) switchWorkflow(w http.ResponseWriter, r *http.Request, p store.Principal) {
	on := r.PostFormValue("enabled") == "true"
	v, err := h.Workflows.Update(r.Context(), p.WorkspaceID, r.PathValue("id"), workflows.Input{Enabled: &on})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	to := Prefix + "/workflows"
	if r.PostFormValue("back") == "workflow" {
		to += "/" + v.ID
	}
	if on {
		h.flash(w, r, to, "The workflow "+v.Name+" is on.")
		return
	}
	h.flash(w, r, to, "The workflow "+v.Name+" is off: its trigger starts no run.")
}

// runWorkflow starts a run by hand; input is an optional JSON object.
func (h *dash) runWorkflow(w http.ResponseWriter, r *http.Request, p store.Principal) {
	var input map[string]any
	if raw := r.PostFormValue("input"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &input); err != nil {
			h.fail(w, r, p, apierr.Invalid("input", "invalid_value", "The input must be a JSON object, such as {\"conversation_id\": \"mc-...\"}."))
			return
		}
	}
	run, err := h.Workflows.StartManual(r.Context(), p.WorkspaceID, r.PathValue("id"), input)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/runs/"+run.ID, "The run "+run.ID+" is started.")
}

// runStep is a step of the timeline, with its output as indented JSON.
type runStep struct {
	workflows.StepView
	OutputJSON string
}

type runData struct {
	Run   workflows.RunView
	Steps []runStep
	Live  bool
}

func (h *dash) runPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	run, err := h.Workflows.Run(r.Context(), p.WorkspaceID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := runData{Run: run, Live: run.Status == workflows.RunQueued || run.Status == workflows.RunRunning || run.Status == workflows.RunWaiting}
	for _, s := range run.Steps {
		st := runStep{StepView: s}
		if s.Output != nil {
			b, _ := json.MarshalIndent(s.Output, "", "  ")
			st.OutputJSON = string(b)
		}
		d.Steps = append(d.Steps, st)
	}
	h.render(w, r, http.StatusOK, "run", view{Title: "Run " + run.ID, Nav: "workflows", P: p, Data: d})
}

func (h *dash) cancelRun(w http.ResponseWriter, r *http.Request, p store.Principal) {
	run, err := h.Workflows.Cancel(r.Context(), p.WorkspaceID, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/runs/"+run.ID, "The run is "+run.Status+".")
}

// triggerText says in words what starts a workflow's runs.
func triggerText(t workflows.TriggerView) string {
	switch t.Type {
	case workflows.TriggerEvent:
		s := "on " + deref(t.Event)
		if t.Condition != nil {
			s += " when " + *t.Condition
		}
		return s
	case workflows.TriggerSchedule:
		s := "cron " + deref(t.Cron) + " in " + deref(t.Timezone)
		if t.NextRunAt != nil {
			s += ", next " + t.NextRunAt.UTC().Format("2006-01-02 15:04 UTC")
		}
		return s
	}
	return "by hand"
}
