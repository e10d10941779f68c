package manage

import (
	"reflect"

	"switchboard/blueprint"
)

// The lists below, with blueprint.Enums, are the one source of the operations'
// enumerations: the input schemas and the error messages are derived from them, and tests
// hold the /api contract and the database's CHECK constraints equal to them. They are
// functions, not variables, so no caller can change a list another one reads.

// AgentStatus says whether an agent answers.
type AgentStatus string

// An agent is enabled or disabled.
const (
	AgentEnabled  AgentStatus = "enabled"
	AgentDisabled AgentStatus = "disabled"
)

// AgentStatuses lists the states of an agent.
func AgentStatuses() []AgentStatus { return []AgentStatus{AgentEnabled, AgentDisabled} }

// A website_crawl source moves from queued to crawling, then to ready or failed; a source
// of another type from pending (waiting for its upload, or queued for ingestion) to ready
// or failed.
const (
	SourcePending  = "pending"
	SourceQueued   = "queued"
	SourceCrawling = "crawling"
	SourceReady    = "ready"
	SourceFailed   = "failed"
)

// SourceStatuses lists the ingestion states of a knowledge source.
func SourceStatuses() []string {
	return []string{SourcePending, SourceQueued, SourceCrawling, SourceReady, SourceFailed}
}

// A voice agent discloses that it is an AI by speaking a text or playing a recording.
const (
	DisclosureSpokenText = "spoken_text"
	DisclosureRecording  = "recording"
)

// DisclosureModes lists how a voice agent discloses that it is an AI.
func DisclosureModes() []string { return []string{DisclosureSpokenText, DisclosureRecording} }

// enums lists the enumerated types the operations' inputs use.
func enums() []blueprint.Enum {
	return append(blueprint.Enums(), blueprint.Enum{
		Type: reflect.TypeFor[AgentStatus](), Def: "agent_status", Values: blueprint.Strings(AgentStatuses()),
	})
}

// A recording is a disclosure clip or a voicemail drop.
const (
	RecordingDisclosure    = "disclosure"
	RecordingVoicemailDrop = "voicemail_drop"
)

// RecordingKinds lists the kinds of recording; only a disclosure clip can be an agent's
// disclosure.
func RecordingKinds() []string { return []string{RecordingDisclosure, RecordingVoicemailDrop} }
