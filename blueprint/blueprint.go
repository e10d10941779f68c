// Package blueprint parses and validates agent blueprints: the YAML documents, with the single
// top-level key `agent`, that define a conversational agent (spec: "Agent (blueprint)" and
// "Limits" in the platform specification).
//
// Parse decodes a blueprint and reports every problem at once, each with its YAML path and line
// ("agent.persona.tone (line 7): must be one of friendly, professional, casual, formal").
// Unknown keys are errors. Defaults are applied to what it returns: a website_crawl source
// without depth gets depth 2, a tool without enabled is enabled. Warnings lists valid but
// questionable settings. JSONSchema returns a JSON Schema (draft 2020-12) of the same format;
// the tests hold it equal to Parse on every file under testdata/blueprints.
//
// Each enumeration (tones, providers, source, channel, trigger, action and tool types) is
// listed once, in Enums: the validator, JSONSchema and manage's tool schemas read the lists,
// and tests hold the /api contract and the database's CHECK constraints equal to them.
//
// Limits from the specification: name 1 to 100 characters, description up to 500, persona
// display_name 1 to 50, greeting 1 to 500, system_prompt 10 to 10000, max_tokens 1 to 8192,
// temperature 0.0 to 2.0, up to 20 knowledge base sources, up to 10 channels, up to 50 labels,
// crawl depth 1 to 5 (default 2, website_crawl only), after_hours_message up to 500.
// Lengths are counted in Unicode code points, as JSON Schema counts them.
//
// Decisions where the specification is silent:
//
//   - Every string, where present, must be non-empty; leave an optional field out instead.
//     null is accepted only for a schedule day (closed); anywhere else it is a type error.
//   - Scalars are not coerced: a string field needs a string (quote `"123"`), an integer field
//     an integer (a whole float such as 100.0 counts, as in JSON Schema), a boolean field true
//     or false (`yes` and `on` are strings).
//   - llm.provider is a vendor family (alpha, beta or gamma). llm.model is any non-empty
//     string, as the spec says; a model id the catalog serves for another family is refused,
//     and a name the catalog does not serve is accepted with a warning (ModelWarnings): the
//     agent's turns then fail with model_not_found rather than run a guessed model.
//   - language is a well-formed BCP 47 tag whose first subtag is a 2- or 3-letter language
//     code known to golang.org/x/text/language, with hyphens (not en_US); und is rejected.
//   - timezone is an IANA zone name that time.LoadLocation knows ("UTC" included, "Local"
//     excluded); zone data is embedded, so it does not depend on the host.
//   - business_hours needs timezone and schedule. A day left out of the schedule is closed,
//     like a day set to null. start is 00:00 to 23:59, end 00:00 to 24:00 (24:00 is
//     midnight at the end of the day). An end earlier than start is an overnight shift
//     (open from start on that day until end on the next); start equal to end is refused.
//     holidays (an addition to the spec) lists up to 366 distinct dates, YYYY-MM-DD,
//     closed all day in the schedule's time zone.
//   - escalation may list keywords (up to 50, 1 to 100 characters each) for keyword_match and
//     pickup_timeout_minutes (1 to 1440) for transfer_to_human; both are additions.
//   - escalation needs enabled; when enabled is true it also needs trigger and action.
//     notification_email is an email address of at most 254 characters. transfer_number (an
//     addition) is an E.164 number, such as +14155550100.
//   - A source url is an http:// or https:// URL with a host, at most 2048 characters; url is
//     allowed (not required) on other source types too, and so is path (at most 1024
//     characters). depth is allowed only on website_crawl.
//   - Labels are 1 to 50 characters each and must be unique. blocked_topics holds at most 100
//     topics of 1 to 200 characters. At most 20 tools. config objects are free-form.
//   - The document is at most MaxSize bytes and a single YAML document. Anchors and aliases
//     are allowed, with a bound on the nodes visited after alias expansion and on nesting
//     depth; merge keys (<<) and custom tags are not supported. Duplicate keys are errors.
//   - At most 100 errors are listed, followed by a count of the others. An error at a path
//     hides errors below it (a persona that is not a mapping has no missing display_name).
package blueprint

import (
	"fmt"
	"sort"
	"strings"

	"switchboard/catalog"
)

// MaxSize is the largest blueprint Parse accepts, in bytes.
const MaxSize = 256 << 10

// Blueprint is a parsed agent blueprint.
type Blueprint struct {
	Agent Agent `yaml:"agent" json:"agent"`
}

// Agent is the `agent` block. Persona and LLM are never nil in a blueprint Parse returns.
type Agent struct {
	Name          string         `yaml:"name" json:"name" validate:"required,max=100"`
	Description   string         `yaml:"description,omitempty" json:"description,omitempty" validate:"max=500"`
	Language      string         `yaml:"language" json:"language" validate:"required,bcp47"`
	Persona       *Persona       `yaml:"persona" json:"persona" validate:"required"`
	LLM           *LLM           `yaml:"llm" json:"llm" validate:"required"`
	KnowledgeBase *KnowledgeBase `yaml:"knowledge_base,omitempty" json:"knowledge_base,omitempty"`
	Channels      []Channel      `yaml:"channels,omitempty" json:"channels,omitempty" validate:"max=10,dive"`
	BusinessRules *BusinessRules `yaml:"business_rules,omitempty" json:"business_rules,omitempty"`
	Labels        []string       `yaml:"labels,omitempty" json:"labels,omitempty" validate:"max=50,unique,dive,max=50"`
	Tools         []Tool         `yaml:"tools,omitempty" json:"tools,omitempty" validate:"max=20,dive"`
	// RetentionDays keeps this agent's conversations that many days after their last
	// message (1 to 36500), overriding the workspace's retention period (issue 48); absent
	// follows the workspace's.
	RetentionDays *int `yaml:"retention_days,omitempty" json:"retention_days,omitempty" validate:"omitempty,min=1,max=36500"`
}

// Persona is how the agent presents itself.
type Persona struct {
	DisplayName string `yaml:"display_name" json:"display_name" validate:"required,max=50"`
	Tone        Tone   `yaml:"tone" json:"tone" validate:"required,enum"`
	Greeting    string `yaml:"greeting" json:"greeting" validate:"required,max=500"`
}

// Tone is the persona's tone of voice.
type Tone string

// The tones, listed by Tones.
const (
	ToneFriendly     Tone = "friendly"
	ToneProfessional Tone = "professional"
	ToneCasual       Tone = "casual"
	ToneFormal       Tone = "formal"
)

// LLM selects and tunes the language model. Temperature and MaxTokens are pointers so that a
// missing value is told apart from zero; they are never nil in a blueprint Parse returns.
type LLM struct {
	Provider     catalog.Family `yaml:"provider" json:"provider" validate:"required,enum"`
	Model        string         `yaml:"model" json:"model" validate:"required"` // any name; served ones are ids of Provider's family in the catalog
	Temperature  *float64       `yaml:"temperature" json:"temperature" validate:"required,min=0,max=2"`
	MaxTokens    *int           `yaml:"max_tokens" json:"max_tokens" validate:"required,min=1,max=8192"`
	SystemPrompt string         `yaml:"system_prompt" json:"system_prompt" validate:"required,min=10,max=10000"`
}

// KnowledgeBase lists the sources the agent answers from.
type KnowledgeBase struct {
	Sources []Source `yaml:"sources,omitempty" json:"sources,omitempty" validate:"max=20,dive"`
}

// Source is one knowledge base source. Depth is set (default 2) exactly when Type is
// SourceWebsiteCrawl. Which fields a type takes (checkSource):
//   - website_crawl: url (required), depth;
//   - api: url (required), fetched once and read as JSON or text;
//   - markdown_file: path (required), the filename of an upload in the workspace;
//   - file_upload: upload_id or path (exactly one), naming an upload by id or by filename;
//   - manual_text: text (required), the knowledge itself.
type Source struct {
	Type     SourceType `yaml:"type" json:"type" validate:"required,enum"`
	URL      string     `yaml:"url,omitempty" json:"url,omitempty" validate:"required_if=Type website_crawl,omitempty,max=2048,http_url"`
	Depth    *int       `yaml:"depth,omitempty" json:"depth,omitempty" validate:"omitempty,min=1,max=5"`
	Path     string     `yaml:"path,omitempty" json:"path,omitempty" validate:"required_if=Type markdown_file,omitempty,max=1024"`
	UploadID string     `yaml:"upload_id,omitempty" json:"upload_id,omitempty" validate:"omitempty,upload_id"`
	Text     string     `yaml:"text,omitempty" json:"text,omitempty" validate:"required_if=Type manual_text,omitempty,max=100000"`
}

// MaxSourceText is the longest text of a manual_text source, in characters.
const MaxSourceText = 100000

// SourceType is the kind of a knowledge base source.
type SourceType string

// The source types, listed by SourceTypes.
const (
	SourceWebsiteCrawl SourceType = "website_crawl"
	SourceFileUpload   SourceType = "file_upload"
	SourceMarkdownFile SourceType = "markdown_file"
	SourceAPI          SourceType = "api"
	SourceManualText   SourceType = "manual_text"
)

// DefaultCrawlDepth is the depth of a website_crawl source that names none.
const DefaultCrawlDepth = 2

// Channel is a channel the agent is meant for. Config is channel-specific and free-form.
type Channel struct {
	Type   ChannelType    `yaml:"type" json:"type" validate:"required,enum"`
	Config map[string]any `yaml:"config,omitempty" json:"config,omitempty"`
}

// ChannelType is the kind of a channel.
type ChannelType string

// The channel types, listed by ChannelTypes.
const (
	ChannelWebchat    ChannelType = "webchat"
	ChannelTelcoVoice ChannelType = "telco_voice"
	ChannelSMS        ChannelType = "sms"
	ChannelMsgApp1    ChannelType = "msgapp_1"
	ChannelMsgApp2    ChannelType = "msgapp_2"
	ChannelMsgApp3    ChannelType = "msgapp_3"
	ChannelMsgApp4    ChannelType = "msgapp_4"
)

// BusinessRules holds opening hours, escalation and topics the agent must not discuss.
type BusinessRules struct {
	BusinessHours *BusinessHours `yaml:"business_hours,omitempty" json:"business_hours,omitempty"`
	Escalation    *Escalation    `yaml:"escalation,omitempty" json:"escalation,omitempty"`
	BlockedTopics []string       `yaml:"blocked_topics,omitempty" json:"blocked_topics,omitempty" validate:"max=100,dive,max=200"`
}

// BusinessHours is a weekly schedule in one time zone.
type BusinessHours struct {
	Timezone          string    `yaml:"timezone" json:"timezone" validate:"required,iana_tz"`
	Schedule          *Schedule `yaml:"schedule" json:"schedule" validate:"required"`
	AfterHoursMessage string    `yaml:"after_hours_message,omitempty" json:"after_hours_message,omitempty" validate:"max=500"`
	// Holidays are dates (YYYY-MM-DD, in Timezone) closed all day, whatever the schedule says.
	Holidays []string `yaml:"holidays,omitempty" json:"holidays,omitempty" validate:"max=366,unique,dive,date"`
}

// Schedule has the opening hours of each day; nil means closed.
type Schedule struct {
	Monday    *Hours `yaml:"monday,omitempty" json:"monday,omitempty"`
	Tuesday   *Hours `yaml:"tuesday,omitempty" json:"tuesday,omitempty"`
	Wednesday *Hours `yaml:"wednesday,omitempty" json:"wednesday,omitempty"`
	Thursday  *Hours `yaml:"thursday,omitempty" json:"thursday,omitempty"`
	Friday    *Hours `yaml:"friday,omitempty" json:"friday,omitempty"`
	Saturday  *Hours `yaml:"saturday,omitempty" json:"saturday,omitempty"`
	Sunday    *Hours `yaml:"sunday,omitempty" json:"sunday,omitempty"`
}

// Hours are the opening hours of one day, as HH:MM local times. An End earlier than Start is
// an overnight shift: open from Start until End on the next day.
type Hours struct {
	Start string `yaml:"start" json:"start" validate:"required,hhmm"`
	End   string `yaml:"end" json:"end" validate:"required,hhmm_end"`
}

// Escalation says when and how a conversation is handed on. Enabled is never nil in a
// blueprint Parse returns; Trigger and Action are set when it is true.
type Escalation struct {
	Enabled           *bool   `yaml:"enabled" json:"enabled" validate:"required"`
	Trigger           Trigger `yaml:"trigger,omitempty" json:"trigger,omitempty" validate:"omitempty,enum"`
	Action            Action  `yaml:"action,omitempty" json:"action,omitempty" validate:"omitempty,enum"`
	NotificationEmail string  `yaml:"notification_email,omitempty" json:"notification_email,omitempty" validate:"omitempty,max=254,email"`
	// Keywords start a keyword_match escalation (whole words or phrases, any case); without
	// them the runtime's default list applies (package converse).
	Keywords []string `yaml:"keywords,omitempty" json:"keywords,omitempty" validate:"max=50,dive,max=100"`
	// PickupTimeoutMinutes is how long a transfer_to_human waits for a human before the
	// visitor is told and asked for contact details; default 5.
	PickupTimeoutMinutes *int `yaml:"pickup_timeout_minutes,omitempty" json:"pickup_timeout_minutes,omitempty" validate:"omitempty,min=1,max=1440"`
	// TransferNumber (E.164) is who a transfer_to_human calls on a phone call (package
	// voice): the caller is put through, and the summary whispered to whoever answers.
	TransferNumber string `yaml:"transfer_number,omitempty" json:"transfer_number,omitempty" validate:"omitempty,e164"`
}

// Trigger is what starts an escalation.
type Trigger string

// The triggers, listed by Triggers.
const (
	TriggerAfter2FailedAttempts Trigger = "after_2_failed_attempts"
	TriggerUserRequest          Trigger = "user_request"
	TriggerKeywordMatch         Trigger = "keyword_match"
	TriggerSentiment            Trigger = "sentiment"
)

// Action is what an escalation does.
type Action string

// The actions, listed by Actions.
const (
	ActionCollectContact    Action = "collect_contact"
	ActionTransferToHuman   Action = "transfer_to_human"
	ActionEmailNotification Action = "email_notification"
)

// Tool is a tool the agent may call. Enabled defaults to true.
type Tool struct {
	Type    ToolType       `yaml:"type" json:"type" validate:"required,enum"`
	Enabled bool           `yaml:"enabled" json:"enabled"`
	Config  map[string]any `yaml:"config,omitempty" json:"config,omitempty"`
}

// setDefaults runs before a tool's keys are decoded.
func (t *Tool) setDefaults() { t.Enabled = true }

// ToolType is the kind of a tool.
type ToolType string

// The tool types, listed by ToolTypes.
const (
	ToolSearchKnowledgeBase ToolType = "search_knowledge_base"
	ToolApplyLabel          ToolType = "apply_label"
	ToolHTTPWebhook         ToolType = "http_webhook" //nolint:gosec // a tool type name, not a credential
	ToolHTTPRequest         ToolType = "http_request"
)

// Error is one problem in a blueprint. Path is the YAML path (agent.channels[1].type), empty
// for a problem with the document as a whole; Line is 1-based, 0 when unknown.
type Error struct {
	Path    string
	Line    int
	Message string
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

// Errors is every problem found in a blueprint, in document order.
type Errors []Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Parse decodes and validates a blueprint against the model catalog cat (catalog.Default()
// when nil). When the blueprint is invalid it returns a nil Blueprint and an Errors.
func Parse(data []byte, cat *catalog.Catalog) (*Blueprint, error) {
	if cat == nil {
		cat = catalog.Default()
	}
	if len(data) > MaxSize {
		return nil, Errors{{Message: fmt.Sprintf("blueprint is %d bytes; the limit is %d", len(data), MaxSize)}}
	}
	root, errs := parseYAML(data)
	if errs != nil {
		return nil, errs
	}
	d := newDecoder()
	var bp Blueprint
	d.decodeRoot(root, &bp)
	if d.aborted {
		return nil, d.errs
	}
	if _, ok := d.lines["agent"]; !ok {
		d.add("agent", d.lines[""], "is required")
	} else {
		validateBlueprint(&bp, cat, d)
	}
	if len(d.errs) > 0 {
		sort.SliceStable(d.errs, func(i, j int) bool { return d.errs[i].Line < d.errs[j].Line })
		if d.dropped > 0 {
			d.errs = append(d.errs, Error{Message: fmt.Sprintf("and %d more errors", d.dropped)})
		}
		return nil, d.errs
	}
	applyDefaults(&bp)
	return &bp, nil
}

func applyDefaults(bp *Blueprint) {
	if kb := bp.Agent.KnowledgeBase; kb != nil {
		for i := range kb.Sources {
			if s := &kb.Sources[i]; s.Type == SourceWebsiteCrawl && s.Depth == nil {
				depth := DefaultCrawlDepth
				s.Depth = &depth
			}
		}
	}
}
