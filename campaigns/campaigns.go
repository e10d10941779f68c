// Package campaigns runs outbound campaigns: an agent messaging an audience of contacts
// from one of its deployments, on a schedule, behind the outbound compliance gate.
//
// States (also in the README and the /api contract):
//
//	draft      → scheduled | running (start; gated)   → cancelled (cancel)
//	scheduled  → running (start time reached)  → paused (pause, the agent is disabled, the workspace suspended) → cancelled
//	running    → completed (audience exhausted) → paused (also: the workspace cannot pay) → cancelled
//	paused     → scheduled | running (start; gated)   → cancelled
//	completed, cancelled: final.
//
// Sending runs in River jobs (CampaignTick) on any replica: each tick decides about up to
// rate_per_minute contacts, writing one campaign_sends row per contact in the transaction
// that decides (unique per campaign and contact), then sends; a contact is never messaged
// twice, across restarts and replicas.
package campaigns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/compliance"
	"switchboard/manage"
	"switchboard/sms"
	"switchboard/store"
)

// The statuses of a campaign.
const (
	Draft     = "draft"
	Scheduled = "scheduled"
	Running   = "running"
	Paused    = "paused"
	Completed = "completed"
	Cancelled = "cancelled"
)

// Statuses lists the statuses in their usual order.
func Statuses() []string { return []string{Draft, Scheduled, Running, Paused, Completed, Cancelled} }

// Status is a campaign's status as an input's type (package bulk's filters): the schema of a
// field of this type lists Statuses (manage.Enumerated).
type Status string

// EnumValues lists the statuses.
func (Status) EnumValues() []string { return Statuses() }

// Limits.
const (
	MaxNameLen         = 200
	MaxFirstMessageLen = 1600 // ten SMS segments
	MaxAudienceItems   = 1000
	DefaultRate        = 10
	MaxRate            = 600
)

// GateError is the 409 of the outbound compliance gate; the server renders it as the exact
// body `{"error": "outbound_compliance_required", "version": "<current>"}`.
type GateError struct{ Version string }

func (e *GateError) Error() string {
	return "outbound_compliance_required: an owner or admin must accept version " + e.Version + " of the outbound compliance acknowledgment"
}

// Audience says who a campaign messages: a contact matching any of the lists, tags or ids.
type Audience struct {
	ListIDs    []uuid.UUID `json:"list_ids"`
	Tags       []string    `json:"tags"`
	ContactIDs []uuid.UUID `json:"contact_ids"`
}

func (a Audience) empty() bool {
	return len(a.ListIDs) == 0 && len(a.Tags) == 0 && len(a.ContactIDs) == 0
}

// Schedule says when a campaign sends.
type Schedule struct {
	// StartAt: not before (null: as soon as started).
	StartAt *time.Time `json:"start_at"`
	// WindowStart and WindowEnd ('HH:MM', in Timezone) bound the hours of sending; both
	// null: any hour. An end before the start spans midnight.
	WindowStart *string `json:"window_start"`
	WindowEnd   *string `json:"window_end"`
	// Timezone is an IANA name; null: the workspace default, UTC.
	Timezone      *string `json:"timezone"`
	RatePerMinute int     `json:"rate_per_minute"`
}

// Counts are a campaign's decisions so far.
type Counts struct {
	Sent        int `json:"sent"`
	Delivered   int `json:"delivered"`
	Undelivered int `json:"undelivered"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	// Answered and Voicemail are a voice campaign's calls a person, or a machine, answered.
	Answered  int `json:"answered"`
	Voicemail int `json:"voicemail"`
}

// Campaign is a campaign as /api answers it.
type Campaign struct {
	ID           uuid.UUID  `json:"id"`
	Object       string     `json:"object"`
	Name         string     `json:"name"`
	Status       string     `json:"status"`
	AgentID      *uuid.UUID `json:"agent_id"`
	DeploymentID *uuid.UUID `json:"deployment_id"`
	Audience     Audience   `json:"audience"`
	FirstMessage *string    `json:"first_message"`
	// Template is what a campaign on WhatsApp sends outside the person's window (template.go).
	Template *Template `json:"template"`
	// VoicemailRecordingID is what a voice campaign plays to an answering machine (voice.go).
	VoicemailRecordingID *uuid.UUID `json:"voicemail_recording_id"`
	Schedule             Schedule   `json:"schedule"`
	PausedReason         *string    `json:"paused_reason"`
	Counts               Counts     `json:"counts"`
	StartedAt            *time.Time `json:"started_at"`
	CompletedAt          *time.Time `json:"completed_at"`
	CancelledAt          *time.Time `json:"cancelled_at"`
	CreatedAt            time.Time  `json:"created_at"`
	UpdatedAt            time.Time  `json:"updated_at"`
}

// List is the workspace's campaigns.
type List struct {
	Object string     `json:"object"`
	Data   []Campaign `json:"data"`
}

// Sender sends a campaign's first message on its channel. The only implementation in this
// release is the SMS adapter (package sms).
type Sender interface {
	Configured() bool
	SendMessage(ctx context.Context, m sms.Outbound) (providerID string, err error)
}

// Config tunes the sending.
type Config struct {
	// Period is the span rate_per_minute is counted over: a minute, except in tests.
	Period time.Duration
	// Now is the clock windows and start times are read by; time.Now when nil.
	Now func() time.Time
	// StatusCallback is where the carrier reports what became of a message sent from a
	// channel (its delivery status callback URL); nil sends without one.
	StatusCallback func(store.Channel) string
	// Apps sends the openings of campaigns on messaging app deployments (WhatsApp); nil: such
	// campaigns cannot start.
	Apps AppSender
	// Calls places the calls of campaigns on telco_voice deployments (package voice); nil:
	// such campaigns cannot start.
	Calls Caller
}

// Service manages campaigns.
type Service struct {
	store      *store.Store
	compliance *compliance.Service
	sender     Sender
	jobs       *river.Client[pgx.Tx]
	cfg        Config
}

// New returns the service; jobs inserts the sending jobs (it need not work them).
func New(st *store.Store, comp *compliance.Service, sender Sender, jobs *river.Client[pgx.Tx], cfg Config) *Service {
	if cfg.Period <= 0 {
		cfg.Period = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: st, compliance: comp, sender: sender, jobs: jobs, cfg: cfg}
}

// Gate is nil when the workspace accepted the current compliance version, else *GateError.
func (s *Service) Gate(ctx context.Context, ws uuid.UUID) error {
	ok, err := s.compliance.Accepted(ctx, ws)
	if err != nil {
		return err
	}
	if !ok {
		return &GateError{Version: s.compliance.Version()}
	}
	return nil
}

// Input is a campaign to create, or the fields of a PATCH (absent: unchanged).
type Input struct {
	Name         *string    `json:"name"`
	Draft        *bool      `json:"draft"`
	AgentID      *uuid.UUID `json:"agent_id"`
	DeploymentID *uuid.UUID `json:"deployment_id"`
	Audience     *Audience  `json:"audience"`
	FirstMessage *string    `json:"first_message"`
	Template     *Template  `json:"template"`
	// VoicemailRecordingID: a voice campaign's voicemail_drop recording (required there).
	VoicemailRecordingID *uuid.UUID `json:"voicemail_recording_id"`
	Schedule             *Schedule  `json:"schedule"`
}

// Create stores a campaign. With draft true it is a draft (only name is needed); without,
// it is created and started at once, which needs the role that starts campaigns, the
// compliance acceptance (the server checks the gate before the body) and everything
// Start needs; nothing is written if any is missing.
func (s *Service) Create(ctx context.Context, ws uuid.UUID, role access.Role, in Input) (Campaign, error) {
	draft := in.Draft != nil && *in.Draft
	if !draft {
		if err := access.Check(role, access.CampaignsStart, "Creating a campaign that starts at once (draft: false)"); err != nil {
			return Campaign{}, err
		}
	}
	f, err := s.fields(ctx, ws, store.Campaign{RatePerMinute: DefaultRate, Audience: []byte("{}")}, in)
	if err != nil {
		return Campaign{}, err
	}
	var out store.Campaign
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		c, err := tx.InsertCampaign(ctx, Draft, f)
		if err != nil {
			return err
		}
		if !draft {
			if err := s.start(ctx, tx, c); err != nil {
				return err
			}
		}
		out, err = tx.CampaignByID(ctx, ws, c.ID)
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	// As committed: read after the commit, a campaign that sends fast could already show
	// as completed by its job.
	return view(out), nil
}

// Get is a campaign of the workspace.
func (s *Service) Get(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	c, err := s.store.CampaignByID(ctx, ws, id)
	if err != nil {
		return Campaign{}, apierr.WithParam(err, "id")
	}
	return view(c), nil
}

// List lists the workspace's campaigns, newest first.
func (s *Service) List(ctx context.Context, ws uuid.UUID, status string, agentID *uuid.UUID) (List, error) {
	var st *string
	if status != "" {
		st = &status
	}
	rows, err := s.store.ListCampaigns(ctx, ws, st, agentID)
	if err != nil {
		return List{}, err
	}
	out := List{Object: "list", Data: make([]Campaign, 0, len(rows))}
	for _, r := range rows {
		out.Data = append(out.Data, view(r))
	}
	return out, nil
}

// editable are the statuses whose fields may change: not while sending, not once over.
var editable = map[string]bool{Draft: true, Scheduled: true, Paused: true}

// Update changes the fields given (a JSON object; PATCH). A running campaign is paused
// first; a completed or cancelled one cannot change.
func (s *Service) Update(ctx context.Context, ws, id uuid.UUID, raw json.RawMessage) (Campaign, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		return Campaign{}, apierr.Invalid("", "invalid_json", "The request body must be a JSON object of fields to change.")
	}
	var in Input
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Campaign{}, apierr.Invalid("", "invalid_json", "The body does not fit a campaign's fields: %v", err)
	}
	if _, ok := keys["draft"]; ok {
		return Campaign{}, apierr.Invalid("draft", "unknown_field", "draft is for create only; start a draft with POST /api/campaigns/{id}/start.")
	}
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		cur, err := tx.LockCampaign(ctx, ws, id)
		if err != nil {
			return apierr.WithParam(err, "id")
		}
		if !editable[cur.Status] {
			return apierr.Conflict("campaign_not_editable", "A %s campaign cannot be changed; pause it first (only draft, scheduled and paused campaigns can be).", cur.Status)
		}
		// Explicit nulls clear the nullable fields.
		for _, k := range []string{"agent_id", "deployment_id", "first_message", "template", "voicemail_recording_id"} {
			if v, ok := keys[k]; ok && string(v) == "null" {
				switch k {
				case "agent_id":
					cur.AgentID = nil
				case "deployment_id":
					cur.DeploymentID = nil
				case "first_message":
					cur.FirstMessage = nil
				case "template":
					cur.Template = nil
				case "voicemail_recording_id":
					cur.VoicemailRecordingID = nil
				}
			}
		}
		f, err := s.fields(ctx, ws, cur, in)
		if err != nil {
			return err
		}
		f.ID = id
		_, err = tx.UpdateCampaign(ctx, f)
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	return s.Get(ctx, ws, id)
}

// Start starts a draft or paused campaign (the server checked the gate before the body):
// it becomes scheduled when its start time is ahead, else running, and its sending job is
// queued. It needs an enabled agent, an SMS deployment of that agent, a first message, an
// audience, a sending number and a configured SMS provider.
func (s *Service) Start(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	var out store.Campaign
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		c, err := tx.LockCampaign(ctx, ws, id)
		if err != nil {
			return apierr.WithParam(err, "id")
		}
		if c.Status != Draft && c.Status != Paused {
			return apierr.Conflict("invalid_transition", "A %s campaign cannot be started; only draft and paused campaigns can.", c.Status)
		}
		if err := s.start(ctx, tx, c); err != nil {
			return err
		}
		out, err = tx.CampaignByID(ctx, ws, id)
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	return view(out), nil // as committed (Create says why)
}

// start checks that c can send and moves it on, queueing its job, in tx.
func (s *Service) start(ctx context.Context, tx *store.Tx, c store.Campaign) error {
	if err := s.ready(ctx, tx, c); err != nil {
		return err
	}
	next := Running
	if c.StartAt != nil && c.StartAt.After(s.cfg.Now()) {
		next = Scheduled
	}
	if _, err := tx.SetCampaignStatus(ctx, c.WorkspaceID, c.ID, next, nil); err != nil {
		return err
	}
	_, err := s.jobs.InsertTx(ctx, tx.Pgx(), TickArgs{WorkspaceID: c.WorkspaceID, CampaignID: c.ID}, nil)
	return err
}

// ready checks everything a campaign needs to send, naming the first missing field.
func (s *Service) ready(ctx context.Context, tx *store.Tx, c store.Campaign) error {
	if c.AgentID == nil {
		return apierr.Unprocessable("agent_id", "missing_parameter", "Set agent_id (PATCH) before starting the campaign.")
	}
	a, err := tx.AgentByID(ctx, c.WorkspaceID, *c.AgentID)
	if err != nil {
		return apierr.WithParam(err, "agent_id")
	}
	if a.Status != string(manage.AgentEnabled) {
		return apierr.Conflict("agent_disabled", "The agent %q is disabled; a disabled agent runs no campaigns. Enable it first.", a.Name)
	}
	if c.DeploymentID == nil {
		return apierr.Unprocessable("deployment_id", "missing_parameter", "Set deployment_id (an sms deployment of the agent) before starting the campaign.")
	}
	d, err := deploymentMaySend(ctx, tx, c.WorkspaceID, *c.AgentID, *c.DeploymentID)
	if err != nil {
		return err
	}
	if err := checkTemplate(d.ChannelType, c.Template); err != nil {
		return err
	}
	voiceCampaign := d.ChannelType == string(blueprint.ChannelTelcoVoice)
	if voiceCampaign {
		if err := checkVoicemail(ctx, tx, c.WorkspaceID, d.ChannelType, c.VoicemailRecordingID); err != nil {
			return err
		}
	} else if c.FirstMessage == nil || strings.TrimSpace(*c.FirstMessage) == "" {
		return apierr.Unprocessable("first_message", "missing_parameter", "Set first_message before starting the campaign.")
	}
	var aud Audience
	if err := json.Unmarshal(c.Audience, &aud); err != nil || aud.empty() {
		return apierr.Unprocessable("audience", "missing_parameter", "Set an audience (list_ids, tags or contact_ids) before starting the campaign.")
	}
	if err := mayPay(ctx, tx, c.WorkspaceID); err != nil {
		return err
	}
	if voiceCampaign {
		if s.cfg.Calls == nil || !s.cfg.Calls.Configured() {
			return apierr.Conflict("sms_provider_not_configured",
				"No carrier account is configured on this server: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN to place calls.")
		}
		_, err := origin(ctx, tx, c)
		return err
	}
	if d.ChannelType == string(templateApp) {
		if s.cfg.Apps == nil {
			return apierr.Conflict("channel_cannot_send", "This server does not send campaigns on the messaging apps.")
		}
		_, err := origin(ctx, tx, c)
		return err
	}
	if !s.sender.Configured() {
		return apierr.Conflict("sms_provider_not_configured",
			"No SMS provider is configured on this server: set TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN to send campaigns.")
	}
	if _, err := sendingNumber(ctx, tx, c.WorkspaceID); err != nil {
		return err
	}
	return nil
}

// deploymentMaySend checks that the deployment is the agent's and on a channel that sends:
// SMS, WhatsApp (msgapp_1) with its channel, or a voice channel (telco_voice: calls, voice.go)
// (template.go says why the other apps do not send campaigns).
func deploymentMaySend(ctx context.Context, q interface {
	CampaignDeployment(context.Context, uuid.UUID, uuid.UUID) (store.DeploymentInfo, error)
}, ws, agentID, deploymentID uuid.UUID) (store.DeploymentInfo, error) {
	d, err := q.CampaignDeployment(ctx, ws, deploymentID)
	if err != nil {
		return d, apierr.WithParam(err, "deployment_id")
	}
	if d.AgentID != agentID {
		return d, apierr.Unprocessable("deployment_id", "deployment_of_other_agent", "The deployment belongs to another agent; use one of the campaign's agent.")
	}
	switch {
	case d.ChannelType == string(blueprint.ChannelSMS):
	case d.ChannelType == string(templateApp) && d.ChannelID != nil:
	case d.ChannelType == string(blueprint.ChannelTelcoVoice) && d.ChannelID != nil:
	default:
		return d, apierr.Unprocessable("deployment_id", "channel_cannot_send", "The deployment is on %s; campaigns send over sms deployments, and msgapp_1 (WhatsApp) and telco_voice deployments on a channel, only.", d.ChannelType)
	}
	return d, nil
}

// sender is the number campaigns send from, with its channel when it is one: the
// workspace's newest connected SMS channel (replies then reach the campaign's agent, and the
// carrier reports deliveries), else its newest active number; on WhatsApp, the deployment's
// channel (number is its phone_number_id).
type sender struct {
	number  string
	channel *store.Channel
	app     bool // a messaging app's channel: AppSender sends
	voice   bool // a voice channel: Caller calls
}

// origin is where a campaign sends from: its deployment's WhatsApp channel, or the SMS
// sending number.
func origin(ctx context.Context, tx *store.Tx, c store.Campaign) (sender, error) {
	if c.DeploymentID == nil || c.AgentID == nil {
		return sendingNumber(ctx, tx, c.WorkspaceID)
	}
	d, err := tx.CampaignDeployment(ctx, c.WorkspaceID, *c.DeploymentID)
	voice := err == nil && d.ChannelType == string(blueprint.ChannelTelcoVoice)
	if err != nil || d.ChannelID == nil || d.ChannelType != string(templateApp) && !voice {
		return sendingNumber(ctx, tx, c.WorkspaceID)
	}
	ch, err := tx.ChannelByID(ctx, c.WorkspaceID, *d.ChannelID)
	if err == nil && ch.Status == store.ChannelConnected && ch.Address != nil {
		return sender{number: *ch.Address, channel: &ch, app: !voice, voice: voice}, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return sender{}, err
	}
	if voice {
		return sender{}, apierr.Conflict("no_sending_number", "The voice channel of the deployment is not connected; connect it (PATCH /api/channels/{id}) first.")
	}
	return sender{}, apierr.Conflict("no_sending_number", "The WhatsApp channel of the deployment is not connected; connect it (PATCH /api/channels/{id}) first.")
}

func sendingNumber(ctx context.Context, tx *store.Tx, ws uuid.UUID) (sender, error) {
	chans, err := tx.ListChannels(ctx, ws, string(blueprint.ChannelSMS))
	if err != nil {
		return sender{}, err
	}
	for _, c := range chans {
		if c.Status == store.ChannelConnected && c.Address != nil {
			return sender{number: *c.Address, channel: &c}, nil
		}
	}
	active := "active"
	nums, err := tx.ListPhoneNumbers(ctx, ws, &active)
	if err != nil {
		return sender{}, err
	}
	if len(nums) == 0 {
		return sender{}, apierr.Conflict("no_sending_number", "The workspace has no phone number to send from; buy one (POST /api/phone-numbers) and connect it (POST /api/channels) first.")
	}
	return sender{number: nums[0].E164}, nil
}

// Pause pauses a scheduled or running campaign; sending stops before its next contact.
func (s *Service) Pause(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	return s.transition(ctx, ws, id, Paused, map[string]bool{Scheduled: true, Running: true})
}

// Cancel ends a campaign that is not over; it cannot be started again.
func (s *Service) Cancel(ctx context.Context, ws, id uuid.UUID) (Campaign, error) {
	return s.transition(ctx, ws, id, Cancelled, map[string]bool{Draft: true, Scheduled: true, Running: true, Paused: true})
}

func (s *Service) transition(ctx context.Context, ws, id uuid.UUID, to string, from map[string]bool) (Campaign, error) {
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		c, err := tx.LockCampaign(ctx, ws, id)
		if err != nil {
			return apierr.WithParam(err, "id")
		}
		if !from[c.Status] {
			return apierr.Conflict("invalid_transition", "A %s campaign cannot become %s.", c.Status, to)
		}
		var reason *string
		if to == Paused {
			r := "user"
			reason = &r
		}
		_, err = tx.SetCampaignStatus(ctx, ws, id, to, reason)
		return err
	})
	if err != nil {
		return Campaign{}, err
	}
	return s.Get(ctx, ws, id)
}

var hhmm = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)

// fields merges in over cur and validates the result.
func (s *Service) fields(ctx context.Context, ws uuid.UUID, cur store.Campaign, in Input) (store.CampaignFields, error) {
	f := store.CampaignFields{WorkspaceID: ws, Name: cur.Name, AgentID: cur.AgentID, DeploymentID: cur.DeploymentID, Audience: cur.Audience,
		FirstMessage: cur.FirstMessage, StartAt: cur.StartAt, WindowStart: cur.WindowStart, WindowEnd: cur.WindowEnd, Timezone: cur.Timezone,
		RatePerMinute: cur.RatePerMinute, Template: cur.Template, VoicemailRecordingID: cur.VoicemailRecordingID}
	if in.Name != nil {
		f.Name = strings.TrimSpace(*in.Name)
	}
	if f.Name == "" || len([]rune(f.Name)) > MaxNameLen {
		return f, apierr.Invalid("name", "invalid_value", "name must be 1 to %d characters.", MaxNameLen)
	}
	if in.AgentID != nil {
		if _, err := s.store.AgentByID(ctx, ws, *in.AgentID); err != nil {
			return f, apierr.WithParam(err, "agent_id")
		}
		f.AgentID = in.AgentID
	}
	if in.DeploymentID != nil {
		if f.AgentID == nil {
			return f, apierr.Invalid("deployment_id", "missing_agent", "Set agent_id with deployment_id: a deployment is one of the campaign's agent.")
		}
		if _, err := deploymentMaySend(ctx, s.store, ws, *f.AgentID, *in.DeploymentID); err != nil {
			return f, err
		}
		f.DeploymentID = in.DeploymentID
	}
	if in.Template != nil {
		t := *in.Template
		if err := t.check(); err != nil {
			return f, err
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return f, err
		}
		f.Template = raw
	}
	if f.DeploymentID != nil { // a WhatsApp deployment needs a template, another takes none
		d, err := s.store.CampaignDeployment(ctx, ws, *f.DeploymentID)
		if err != nil {
			return f, apierr.WithParam(err, "deployment_id")
		}
		if err := checkTemplate(d.ChannelType, f.Template); err != nil {
			return f, err
		}
		if in.VoicemailRecordingID != nil {
			f.VoicemailRecordingID = in.VoicemailRecordingID
		}
		if err := checkVoicemail(ctx, s.store, ws, d.ChannelType, f.VoicemailRecordingID); err != nil {
			return f, err
		}
	} else if in.VoicemailRecordingID != nil {
		// No deployment yet (a draft): the recording is checked now, and again with one.
		if err := checkVoicemail(ctx, s.store, ws, string(blueprint.ChannelTelcoVoice), in.VoicemailRecordingID); err != nil {
			return f, err
		}
		f.VoicemailRecordingID = in.VoicemailRecordingID
	}
	if in.FirstMessage != nil {
		m := strings.TrimSpace(*in.FirstMessage)
		if m == "" || len([]rune(m)) > MaxFirstMessageLen {
			return f, apierr.Invalid("first_message", "invalid_value", "first_message must be 1 to %d characters.", MaxFirstMessageLen)
		}
		f.FirstMessage = &m
	}
	if in.Audience != nil {
		a := *in.Audience
		if len(a.ListIDs)+len(a.Tags)+len(a.ContactIDs) > MaxAudienceItems {
			return f, apierr.Invalid("audience", "invalid_value", "An audience names at most %d lists, tags and contacts together.", MaxAudienceItems)
		}
		for i, l := range a.ListIDs {
			if _, err := s.store.ContactListByID(ctx, ws, l); err != nil {
				return f, apierr.WithParam(err, fmt.Sprintf("audience.list_ids[%d]", i))
			}
		}
		for i, t := range a.Tags {
			if strings.TrimSpace(t) == "" {
				return f, apierr.Invalid(fmt.Sprintf("audience.tags[%d]", i), "invalid_value", "A tag cannot be empty.")
			}
		}
		raw, err := json.Marshal(a)
		if err != nil {
			return f, err
		}
		f.Audience = raw
	}
	if sc := in.Schedule; sc != nil {
		f.StartAt = sc.StartAt
		for _, w := range []struct {
			v     *string
			param string
		}{{sc.WindowStart, "schedule.window_start"}, {sc.WindowEnd, "schedule.window_end"}} {
			if w.v != nil && !hhmm.MatchString(*w.v) {
				return f, apierr.Invalid(w.param, "invalid_value", "%s must be a time of day as HH:MM (24 h), such as 09:00.", w.param)
			}
		}
		if (sc.WindowStart == nil) != (sc.WindowEnd == nil) {
			return f, apierr.Invalid("schedule.window_end", "invalid_value", "Give both window_start and window_end, or neither (any hour).")
		}
		if sc.WindowStart != nil && *sc.WindowStart == *sc.WindowEnd {
			return f, apierr.Invalid("schedule.window_end", "invalid_value", "window_end must differ from window_start.")
		}
		f.WindowStart, f.WindowEnd = sc.WindowStart, sc.WindowEnd
		if sc.Timezone != nil {
			if _, err := time.LoadLocation(*sc.Timezone); err != nil || *sc.Timezone == "" || *sc.Timezone == "Local" {
				return f, apierr.Invalid("schedule.timezone", "invalid_value", "schedule.timezone must be an IANA time zone such as America/New_York.")
			}
		}
		f.Timezone = sc.Timezone
		if sc.RatePerMinute != 0 {
			if sc.RatePerMinute < 1 || sc.RatePerMinute > MaxRate {
				return f, apierr.Invalid("schedule.rate_per_minute", "invalid_value", "schedule.rate_per_minute must be 1 to %d.", MaxRate)
			}
			f.RatePerMinute = sc.RatePerMinute
		}
	}
	return f, nil
}

func view(c store.Campaign) Campaign {
	var aud Audience
	_ = json.Unmarshal(c.Audience, &aud)
	if aud.ListIDs == nil {
		aud.ListIDs = []uuid.UUID{}
	}
	if aud.Tags == nil {
		aud.Tags = []string{}
	}
	if aud.ContactIDs == nil {
		aud.ContactIDs = []uuid.UUID{}
	}
	var tmpl *Template
	if len(c.Template) > 0 {
		tmpl = &Template{}
		_ = json.Unmarshal(c.Template, tmpl)
	}
	return Campaign{ID: c.ID, Object: "campaign", Name: c.Name, Status: c.Status, AgentID: c.AgentID, DeploymentID: c.DeploymentID,
		Audience: aud, FirstMessage: c.FirstMessage, Template: tmpl, VoicemailRecordingID: c.VoicemailRecordingID,
		Schedule:     Schedule{StartAt: c.StartAt, WindowStart: c.WindowStart, WindowEnd: c.WindowEnd, Timezone: c.Timezone, RatePerMinute: c.RatePerMinute},
		PausedReason: c.PausedReason, Counts: Counts{Sent: c.SentCount, Delivered: c.DeliveredCount, Undelivered: c.UndeliveredCount,
			Failed: c.FailedCount, Skipped: c.SkippedCount, Answered: c.AnsweredCount, Voicemail: c.VoicemailCount},
		StartedAt: c.StartedAt, CompletedAt: c.CompletedAt, CancelledAt: c.CancelledAt, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// errStop ends a tick without error.
var errStop = errors.New("stop")
