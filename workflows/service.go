package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/mailer"
	"switchboard/netguard"
	"switchboard/shortid"
	"switchboard/store"
)

// Run statuses. queued, running and waiting are live; the others are final, and a run
// reaches one of them exactly once (with its run.completed event).
const (
	RunQueued    = "queued"
	RunRunning   = "running"
	RunWaiting   = "waiting" // in a wait step, or between attempts of a failed step
	RunSucceeded = "succeeded"
	RunFailed    = "failed"
	RunCancelled = "cancelled"
)

func finalStatus(s string) bool { return s == RunSucceeded || s == RunFailed || s == RunCancelled }

// Config is what runs reach outside the database through, and the clock they read.
type Config struct {
	Now         func() time.Time // nil: time.Now
	Guard       netguard.Guard   // every http_request URL passes it, at check and dial time
	HTTPTimeout time.Duration    // one http_request; 0: 30 s
	Mailer      *mailer.Sender   // email and send_message on email; nil: those steps fail
	Models      Models           // agent_prompt; nil: the step fails
	Catalog     *catalog.Catalog // prices of agent_prompt's models; nil: catalog.Default()
	SMS         SMSQueue         // send_message on sms and the messaging apps; nil: the step fails
	Backoff     func(attempt int) time.Duration
	TickPeriod  time.Duration // how often triggers are looked at; 0: 2 s
}

// Service manages workflows and works their runs.
type Service struct {
	store  *store.Store
	jobs   *river.Client[pgx.Tx] // inserts run jobs (an insert-only client works)
	cfg    Config
	client *http.Client
	log    *slog.Logger
}

// New returns the workflow service.
func New(st *store.Store, jobs *river.Client[pgx.Tx], cfg Config, log *slog.Logger) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.HTTPTimeout == 0 {
		cfg.HTTPTimeout = 30 * time.Second
	}
	if cfg.Catalog == nil {
		cfg.Catalog = catalog.Default()
	}
	if cfg.Backoff == nil {
		cfg.Backoff = defaultBackoff
	}
	if cfg.TickPeriod == 0 {
		cfg.TickPeriod = 2 * time.Second
	}
	return &Service{store: st, jobs: jobs, cfg: cfg, client: cfg.Guard.Client(cfg.HTTPTimeout), log: log}
}

// defaultBackoff waits 5 s, 10 s, 20 s... between attempts of a step, at most 10 minutes.
func defaultBackoff(attempt int) time.Duration {
	d := 5 * time.Second << min(attempt-1, 10)
	return min(d, 10*time.Minute)
}

// View is a workflow as /api answers it.
type View struct {
	ID          string      `json:"id"`
	Object      string      `json:"object"`
	Name        string      `json:"name"`
	Description *string     `json:"description"`
	Enabled     bool        `json:"enabled"`
	Trigger     TriggerView `json:"trigger"`
	Document    string      `json:"document"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
}

// TriggerView is a workflow's trigger as /api answers it.
type TriggerView struct {
	Type      TriggerType `json:"type"`
	Event     *string     `json:"event"`
	Condition *string     `json:"condition"`
	Cron      *string     `json:"cron"`
	Timezone  *string     `json:"timezone"`
	NextRunAt *time.Time  `json:"next_run_at"`
}

// List is a list of workflows.
type List struct {
	Object string `json:"object"`
	Data   []View `json:"data"`
}

// Deleted is the answer to a deletion.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// Input is what creating or changing a workflow gives: the document, and (PATCH) the
// enabled flag alone.
type Input struct {
	Document *string
	Enabled  *bool
}

// invalid reports every document error at once, each with its path and line.
// parse reads a document about to be saved: Parse, and every agent_prompt's model in this
// server's catalog, so that a misspelt model is refused at its line when the workflow is
// saved rather than failing the runs.
func (s *Service) parse(source string) (*Document, error) {
	doc, err := Parse([]byte(source))
	if err != nil {
		return nil, err
	}
	var errs Errors
	for i, st := range doc.Steps {
		if st.Type != StepAgentPrompt {
			continue
		}
		if _, ok := s.cfg.Catalog.Lookup(st.Model); !ok {
			errs = append(errs, Error{Path: fmt.Sprintf("steps[%d].model", i), Line: st.modelLine,
				Message: fmt.Sprintf("%q is not a model of this server (GET /v1/models lists them)", st.Model)})
		}
	}
	if errs != nil {
		return nil, errs
	}
	return doc, nil
}

func invalid(err error) error {
	var errs Errors
	if !errors.As(err, &errs) {
		return apierr.Invalid("document", "invalid_workflow", "%v", err)
	}
	return &apierr.Error{Kind: apierr.KindInvalid, Param: "document", Code: "invalid_workflow",
		Message: fmt.Sprintf("The workflow has %d error(s):\n%s", len(errs), errs.Error()), Err: errs}
}

func (s *Service) write(doc *Document, source string, enabled bool) store.WorkflowWrite {
	w := store.WorkflowWrite{Name: doc.Name, Enabled: enabled, Document: source, TriggerKind: string(doc.Trigger.Type)}
	if doc.Description != "" {
		w.Description = &doc.Description
	}
	if doc.Trigger.Type == TriggerEvent {
		w.TriggerEvent = &doc.Trigger.Event
	}
	if doc.Trigger.Type == TriggerSchedule {
		next := doc.Trigger.Next(s.cfg.Now())
		w.NextFireAt = &next
	}
	return w
}

// Create stores a new workflow.
func (s *Service) Create(ctx context.Context, ws uuid.UUID, in Input) (View, error) {
	if in.Document == nil {
		return View{}, apierr.Invalid("document", "missing_required_parameter", "document (the workflow's YAML) is required.")
	}
	doc, err := s.parse(*in.Document)
	if err != nil {
		return View{}, invalid(err)
	}
	enabled := doc.Enabled
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	w, err := s.store.InsertWorkflow(ctx, ws, shortid.New("wf_"), s.write(doc, *in.Document, enabled))
	if errors.Is(err, store.ErrExists) {
		return View{}, apierr.Conflict("workflow_name_taken", "The workspace already has a workflow named %q.", doc.Name)
	}
	if err != nil {
		return View{}, err
	}
	return view(w), nil
}

// Update replaces a workflow's document, or only turns it on or off. Runs already started
// go on with the document they started with.
func (s *Service) Update(ctx context.Context, ws uuid.UUID, id string, in Input) (View, error) {
	old, err := s.store.WorkflowByShortID(ctx, ws, id)
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	source := old.Document
	if in.Document != nil {
		source = *in.Document
	}
	doc, err := s.parse(source)
	if err != nil {
		return View{}, invalid(err)
	}
	enabled := old.Enabled
	switch {
	case in.Enabled != nil:
		enabled = *in.Enabled
	case in.Document != nil:
		enabled = doc.Enabled
	}
	w, err := s.store.UpdateWorkflow(ctx, ws, id, s.write(doc, source, enabled))
	if errors.Is(err, store.ErrExists) {
		return View{}, apierr.Conflict("workflow_name_taken", "The workspace already has a workflow named %q.", doc.Name)
	}
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	return view(w), nil
}

// Get is one workflow.
func (s *Service) Get(ctx context.Context, ws uuid.UUID, id string) (View, error) {
	w, err := s.store.WorkflowByShortID(ctx, ws, id)
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	return view(w), nil
}

// List is the workspace's workflows, newest first.
func (s *Service) List(ctx context.Context, ws uuid.UUID) (List, error) {
	list, err := s.store.ListWorkflows(ctx, ws)
	if err != nil {
		return List{}, err
	}
	out := List{Object: "list", Data: make([]View, 0, len(list))}
	for _, w := range list {
		out.Data = append(out.Data, view(w))
	}
	return out, nil
}

// Delete removes a workflow with its runs (a live run stops before its next step).
func (s *Service) Delete(ctx context.Context, ws uuid.UUID, id string) (Deleted, error) {
	if err := s.store.DeleteWorkflow(ctx, ws, id); err != nil {
		return Deleted{}, apierr.WithParam(err, "id")
	}
	return Deleted{ID: id, Object: "workflow.deleted", Deleted: true}, nil
}

func view(w store.Workflow) View {
	v := View{ID: w.ShortID, Object: "workflow", Name: w.Name, Description: w.Description, Enabled: w.Enabled,
		Document: w.Document, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	v.Trigger.Type = TriggerType(w.TriggerKind)
	v.Trigger.Event = w.TriggerEvent
	if doc, err := Parse([]byte(w.Document)); err == nil {
		t := doc.Trigger
		if t.Condition != nil {
			v.Trigger.Condition = &t.Condition.Source
		}
		if t.Type == TriggerSchedule {
			v.Trigger.Cron, v.Trigger.Timezone = &t.Cron, &t.Timezone
			if w.Enabled && w.NextFireAt != nil {
				next := w.NextFireAt.UTC()
				v.Trigger.NextRunAt = &next
			}
		}
	}
	return v
}

// RunView is a run as /api answers it.
type RunView struct {
	ID         string         `json:"id"`
	Object     string         `json:"object"`
	WorkflowID string         `json:"workflow_id"`
	Status     string         `json:"status"`
	Trigger    map[string]any `json:"trigger"`
	Error      *string        `json:"error"`
	CreatedAt  time.Time      `json:"created_at"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	Deadline   time.Time      `json:"deadline"`
	ResumeAt   *time.Time     `json:"resume_at"`
	Steps      []StepView     `json:"steps"`
}

// StepView is one step of a run.
type StepView struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	Output     any        `json:"output"`
	Error      *string    `json:"error"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// RunList is a list of runs.
type RunList struct {
	Object string    `json:"object"`
	Data   []RunView `json:"data"`
}

func runView(r store.WorkflowRun, steps []store.WorkflowRunStep) RunView {
	v := RunView{ID: r.ShortID, Object: "workflow.run", WorkflowID: r.WorkflowShortID, Status: r.Status, Error: r.Error,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Deadline: r.Deadline, ResumeAt: r.ResumeAt,
		Steps: []StepView{}}
	var trig runTrigger
	_ = json.Unmarshal(r.Trigger, &trig)
	v.Trigger = map[string]any{"type": trig.Type}
	if trig.Event != nil {
		v.Trigger["event_id"] = trig.Event["id"]
	}
	if trig.Input != nil {
		v.Trigger["input"] = trig.Input
	}
	if trig.At != nil {
		v.Trigger["scheduled_at"] = trig.At
	}
	for _, st := range steps {
		sv := StepView{ID: st.StepID, Type: st.Type, Status: st.Status, Attempts: st.Attempts, Error: st.Error,
			StartedAt: st.StartedAt, FinishedAt: st.FinishedAt}
		if len(st.Output) > 0 {
			_ = json.Unmarshal(st.Output, &sv.Output)
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// Run is one run with its steps.
func (s *Service) Run(ctx context.Context, ws uuid.UUID, id string) (RunView, error) {
	r, err := s.store.WorkflowRunByShortID(ctx, ws, id)
	if err != nil {
		return RunView{}, apierr.WithParam(err, "id")
	}
	steps, err := s.store.WorkflowRunSteps(ctx, ws, r.ID)
	if err != nil {
		return RunView{}, err
	}
	return runView(r, steps), nil
}

// Runs lists a workflow's runs, newest first (at most 100), without their steps' outputs.
func (s *Service) Runs(ctx context.Context, ws uuid.UUID, workflowID string) (RunList, error) {
	w, err := s.store.WorkflowByShortID(ctx, ws, workflowID)
	if err != nil {
		return RunList{}, apierr.WithParam(err, "id")
	}
	runs, err := s.store.ListWorkflowRuns(ctx, ws, w.ID, 100)
	if err != nil {
		return RunList{}, err
	}
	out := RunList{Object: "list", Data: make([]RunView, 0, len(runs))}
	for _, r := range runs {
		out.Data = append(out.Data, runView(r, nil))
	}
	return out, nil
}

// runTrigger is what started a run, as stored with it.
type runTrigger struct {
	Type  TriggerType    `json:"type"`
	Event map[string]any `json:"event,omitempty"` // the envelope
	Input map[string]any `json:"input,omitempty"`
	At    *time.Time     `json:"at,omitempty"` // the schedule's time
}

// StartManual starts a run of a workflow with input (any workflow, enabled or not: a
// person trying it out). input.conversation_id and input.contact_id, when given, are the
// run's conversation and contact.
func (s *Service) StartManual(ctx context.Context, ws uuid.UUID, workflowID string, input map[string]any) (RunView, error) {
	w, err := s.store.WorkflowByShortID(ctx, ws, workflowID)
	if err != nil {
		return RunView{}, apierr.WithParam(err, "id")
	}
	if input == nil {
		input = map[string]any{}
	}
	var run store.WorkflowRun
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		conv, contact, err := s.subjects(ctx, tx, ws, input)
		if err != nil {
			return err
		}
		// The run's references take its conversation's KEY SHARE, then its contact's (their
		// columns' order): taken here first, contact then conversation, an erasure of the
		// contact waits for the start, or the start for it, instead of each for the other.
		if err := lockSubjects(ctx, tx, ws, contact, conv); err != nil {
			return err
		}
		r, _, err := s.start(ctx, tx, w, runTrigger{Type: TriggerManual, Input: input}, nil, conv, contact)
		run = r
		return err
	})
	if err != nil {
		return RunView{}, err
	}
	return runView(run, nil), nil
}

// subjects reads the conversation and contact a manual run names, each a reference the
// workspace owns (404 otherwise, nothing started).
func (s *Service) subjects(ctx context.Context, tx *store.Tx, ws uuid.UUID, input map[string]any) (conv, contact *uuid.UUID, err error) {
	if ref, ok := input["conversation_id"].(string); ok {
		c, err := tx.ConversationByRef(ctx, ws, ref)
		if err != nil {
			return nil, nil, apierr.WithParam(err, "input.conversation_id")
		}
		conv = &c.ID
		if wc, err := tx.WorkflowConversation(ctx, ws, c.ID); err == nil {
			contact = wc.ContactID
		}
	}
	if ref, ok := input["contact_id"].(string); ok {
		id, err := uuid.Parse(ref)
		if err != nil {
			return nil, nil, apierr.Invalid("input.contact_id", "invalid_value", "input.contact_id must be a contact's id (a UUID).")
		}
		if _, err := tx.ContactByID(ctx, ws, id); err != nil {
			return nil, nil, apierr.WithParam(err, "input.contact_id")
		}
		contact = &id
	}
	return conv, contact, nil
}

// start records a run and queues its job in tx. A run for the same key exists: ok false.
func (s *Service) start(ctx context.Context, tx *store.Tx, w store.Workflow, trig runTrigger, key *string, conv, contact *uuid.UUID) (store.WorkflowRun, bool, error) {
	doc, err := Parse([]byte(w.Document))
	if err != nil {
		return store.WorkflowRun{}, false, fmt.Errorf("stored workflow %s: %w", w.ShortID, err)
	}
	raw, err := json.Marshal(trig)
	if err != nil {
		return store.WorkflowRun{}, false, err
	}
	now := s.cfg.Now()
	r, ok, err := tx.InsertWorkflowRun(ctx, w.WorkspaceID, store.NewWorkflowRun{WorkflowID: w.ID, ShortID: shortid.New("run_"),
		Document: w.Document, Trigger: raw, TriggerKey: key, ConversationID: conv, ContactID: contact,
		Deadline: now.Add(doc.Timeout), CreatedAt: now})
	if err != nil || !ok {
		return store.WorkflowRun{}, false, err
	}
	if _, err := s.jobs.InsertTx(ctx, tx.Pgx(), RunArgs{WorkspaceID: w.WorkspaceID, RunID: r.ID}, nil); err != nil {
		return store.WorkflowRun{}, false, err
	}
	run := store.WorkflowRun{ID: r.ID, WorkspaceID: r.WorkspaceID, ShortID: r.ShortID, WorkflowID: r.WorkflowID, Status: r.Status,
		Document: r.Document, Trigger: r.Trigger, TriggerKey: r.TriggerKey, ConversationID: r.ConversationID, ContactID: r.ContactID,
		NextStep: r.NextStep, Deadline: r.Deadline, CreatedAt: r.CreatedAt, WorkflowShortID: w.ShortID}
	return run, true, nil
}

// Cancel stops a run: a live run ends cancelled (with its run.completed) and does not start
// another step; a finished run is answered as it is.
func (s *Service) Cancel(ctx context.Context, ws uuid.UUID, id string) (RunView, error) {
	r, err := s.store.WorkflowRunByShortID(ctx, ws, id)
	if err != nil {
		return RunView{}, apierr.WithParam(err, "id")
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		locked, err := tx.LockWorkflowRun(ctx, ws, r.ID)
		if err != nil || finalStatus(locked.Status) {
			return err
		}
		return s.finish(ctx, tx, locked, RunCancelled, nil)
	})
	if err != nil {
		return RunView{}, err
	}
	return s.Run(ctx, ws, id)
}

// finish ends a live run in tx with its one run.completed event: the run's row is locked,
// and only a live run gets here.
func (s *Service) finish(ctx context.Context, tx *store.Tx, r store.WorkflowRun, status string, reason *string) error {
	if err := tx.FinishWorkflowRun(ctx, r.ID, status, reason, s.cfg.Now()); err != nil {
		return err
	}
	_, err := tx.AppendEvents(ctx, r.WorkspaceID, []store.NewEvent{{Type: "run.completed",
		Data: map[string]any{"run_id": r.ShortID, "workflow_id": r.WorkflowShortID, "status": status}}})
	return err
}
