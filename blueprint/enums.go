package blueprint

import (
	"reflect"
	"slices"

	"switchboard/catalog"
)

// The lists below are the one source of each enumeration of the blueprint. The validator
// checks a field of an enumerated type against its list (the `enum` tag), JSONSchema writes
// the lists into the published schema, manage derives its tool schemas from them, and tests
// hold the /api contract and the database's CHECK constraints equal to them. They are
// functions, not variables, so no caller can change a list another one reads.

// Tones lists the persona tones.
func Tones() []Tone { return []Tone{ToneFriendly, ToneProfessional, ToneCasual, ToneFormal} }

// Providers lists the LLM vendor families, in the catalog's order.
func Providers() []catalog.Family { return slices.Clone(catalog.Families) }

// SourceTypes lists the kinds of knowledge base source.
func SourceTypes() []SourceType {
	return []SourceType{SourceWebsiteCrawl, SourceFileUpload, SourceMarkdownFile, SourceAPI, SourceManualText}
}

// ChannelTypes lists the kinds of channel: those a blueprint names, those an agent is
// deployed to and those a channel row is of.
func ChannelTypes() []ChannelType {
	return []ChannelType{ChannelWebchat, ChannelTelcoVoice, ChannelSMS, ChannelMsgApp1, ChannelMsgApp2, ChannelMsgApp3, ChannelMsgApp4}
}

// Triggers lists what can start an escalation.
func Triggers() []Trigger {
	return []Trigger{TriggerAfter2FailedAttempts, TriggerUserRequest, TriggerKeywordMatch, TriggerSentiment}
}

// Actions lists what an escalation can do.
func Actions() []Action {
	return []Action{ActionCollectContact, ActionTransferToHuman, ActionEmailNotification}
}

// ToolTypes lists the kinds of tool an agent may call.
func ToolTypes() []ToolType {
	return []ToolType{ToolSearchKnowledgeBase, ToolApplyLabel, ToolHTTPWebhook, ToolHTTPRequest}
}

// Enum is an enumerated string type of the blueprint with its values, and the name of its
// definition in the JSON Schema ($defs).
type Enum struct {
	Type   reflect.Type
	Def    string
	Values []string
}

// Enums lists the blueprint's enumerated types.
func Enums() []Enum {
	return []Enum{
		enum("tone", Tones()),
		enum("provider", Providers()),
		enum("source_type", SourceTypes()),
		enum("channel_type", ChannelTypes()),
		enum("trigger", Triggers()),
		enum("action", Actions()),
		enum("tool_type", ToolTypes()),
	}
}

func enum[T ~string](def string, values []T) Enum {
	return Enum{Type: reflect.TypeFor[T](), Def: def, Values: Strings(values)}
}

// EnumValues returns the values of an enumerated type of the blueprint, nil for any other
// type.
func EnumValues(t reflect.Type) []string {
	for _, e := range Enums() {
		if e.Type == t {
			return e.Values
		}
	}
	return nil
}

// Strings converts a list of enumerated values to plain strings.
func Strings[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}
