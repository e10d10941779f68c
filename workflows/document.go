// Package workflows holds workflow documents (a trigger and steps, in YAML), their
// validation, and their durable runs: each run is worked by a River job that records every
// step's result before the next starts, so a run resumes where it stood after a crash, and
// finishes with one run.completed event.
package workflows

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// TriggerType is what starts a workflow's runs.
type TriggerType string

// The trigger types.
const (
	TriggerEvent    TriggerType = "event"    // an event of the workspace, with an optional condition
	TriggerSchedule TriggerType = "schedule" // a cron expression in an IANA time zone
	TriggerManual   TriggerType = "manual"   // only POST /api/workflows/{id}/runs
)

// TriggerTypes lists the trigger types (the JSON Schema's enum).
func TriggerTypes() []TriggerType { return []TriggerType{TriggerEvent, TriggerSchedule, TriggerManual} }

// TriggerEvents are the event types a workflow can start on. run.completed is left out on
// purpose: a workflow started by the end of a run could start itself forever.
func TriggerEvents() []string {
	return []string{"conversation.created", "turn.completed", "confirmation.resolved", "spend.recorded"}
}

// StepType is what a step does.
type StepType string

// The step types.
const (
	StepIf            StepType = "if"             // a condition: false skips to `else` (a later step, or end)
	StepWait          StepType = "wait"           // a duration, or until a time
	StepHTTPRequest   StepType = "http_request"   // through netguard; the response is the output
	StepSendMessage   StepType = "send_message"   // to the run's contact: SMS, a messaging app, or email
	StepApplyLabel    StepType = "apply_label"    // on the run's conversation
	StepUpdateContact StepType = "update_contact" // name, email, phone of the run's contact
	StepAgentPrompt   StepType = "agent_prompt"   // one metered model call over the transcript
	StepEmail         StepType = "email"          // to any address, through SMTP_URL
)

// StepTypes lists the step types (the JSON Schema's enum).
func StepTypes() []StepType {
	return []StepType{StepIf, StepWait, StepHTTPRequest, StepSendMessage, StepApplyLabel, StepUpdateContact, StepAgentPrompt, StepEmail}
}

// sideEffecting steps change something outside the run: they carry an idempotency key, and
// may be retried.
func (t StepType) sideEffecting() bool {
	switch t {
	case StepHTTPRequest, StepSendMessage, StepEmail, StepAgentPrompt:
		return true
	}
	return false
}

// Limits of a document.
const (
	MaxSize         = 64 << 10 // bytes of YAML
	MaxSteps        = 50
	DefaultTimeout  = 24 * time.Hour      // a run's time limit when the document gives none
	MaxTimeout      = 30 * 24 * time.Hour // the longest time limit a document may set
	DefaultRetries  = 3                   // further attempts of a side-effecting step after a transient failure
	MaxRetries      = 10
	maxExpression   = 4096 // characters of one expression
	EndOfRun        = "end"
	defaultTimezone = "UTC"
)

// Document is a validated workflow.
type Document struct {
	Name        string
	Description string
	Enabled     bool
	Trigger     Trigger
	Timeout     time.Duration // the run's time limit
	Steps       []Step
}

// Trigger is what starts a workflow's runs.
type Trigger struct {
	Type      TriggerType
	Event     string // TriggerEvent: the event type
	Condition *Expr  // TriggerEvent: over `event` (the envelope); nil: every event
	Cron      string // TriggerSchedule
	Timezone  string // TriggerSchedule: IANA name, UTC by default

	schedule cron.Schedule
	location *time.Location
}

// Next is the first time the schedule fires after t (zero for other triggers).
func (t Trigger) Next(after time.Time) time.Time {
	if t.schedule == nil {
		return time.Time{}
	}
	return t.schedule.Next(after.In(t.location)).UTC()
}

// Step is one step. Which fields a type reads is listed in stepFields.
type Step struct {
	ID      string
	Type    StepType
	Retries int // further attempts after a transient failure (side-effecting steps)

	Condition *Expr  // if
	Else      string // if: a later step's id, or "end"
	elseLine  int

	Duration time.Duration // wait
	Until    *Expr         // wait: a timestamp (or an RFC 3339 string)

	Method  string               // http_request
	URL     *Template            // http_request
	Headers map[string]*Template // http_request
	Body    *Template            // http_request, email, send_message (the text)

	Label     *Template            // apply_label
	Set       map[string]*Template // update_contact: name, email, phone
	Prompt    *Template            // agent_prompt
	Model     string               // agent_prompt
	modelLine int
	To        *Template // email
	Subject   *Template // email, send_message on email
	Channel   string    // send_message: one of MessageChannels
}

// Error is one problem in a document: the YAML path (steps[1].url), empty for the document
// as a whole, and the 1-based line, 0 when unknown.
type Error struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func (e Error) Error() string {
	switch {
	case e.Path != "" && e.Line > 0:
		return fmt.Sprintf("%s (line %d): %s", e.Path, e.Line, e.Message)
	case e.Path != "":
		return e.Path + ": " + e.Message
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Message)
	}
	return e.Message
}

// Errors is every problem found in a document, in line order.
type Errors []Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}

// stepFields are the keys each step type takes besides id, type and retries.
var stepFields = map[StepType][]string{
	StepIf:            {"condition", "else"},
	StepWait:          {"duration", "until"},
	StepHTTPRequest:   {"method", "url", "headers", "body"},
	StepSendMessage:   {"channel", "body", "subject"},
	StepApplyLabel:    {"label"},
	StepUpdateContact: {"set"},
	StepAgentPrompt:   {"prompt", "model"},
	StepEmail:         {"to", "subject", "body"},
}

// requiredFields are the keys each step type cannot go without.
var requiredFields = map[StepType][]string{
	StepIf:            {"condition"},
	StepHTTPRequest:   {"url"},
	StepSendMessage:   {"channel", "body"},
	StepApplyLabel:    {"label"},
	StepUpdateContact: {"set"},
	StepAgentPrompt:   {"prompt", "model"},
	StepEmail:         {"to", "subject", "body"},
}

// contactFields are the fields update_contact may set.
var contactFields = []string{"name", "email", "phone"}

// httpMethods are the methods an http_request may use.
var httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// cronParser reads standard five-field cron expressions and the @daily family.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// MessageChannels are the channels send_message sends on: email to the run's contact's
// address; SMS and the messaging apps in the run's conversation on that channel.
var MessageChannels = []string{"sms", "msgapp_1", "msgapp_2", "msgapp_3", "msgapp_4", "email"}
