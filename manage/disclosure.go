package manage

import (
	"strings"

	"github.com/google/uuid"

	"switchboard/blueprint"
	"switchboard/store"
)

// disclosureDefaults are the platform's default disclosure texts: spoken on calls, written on
// every text channel (a chat must never say "this call may be recorded"), in each language the
// widget speaks. Other languages fall back to English, and get_agent's note says so.
var disclosureDefaults = map[string]struct{ voice, text string }{
	"en": {DefaultDisclosureText, "You are chatting with an automated AI assistant."},
	"de": {"Hallo, Sie sprechen mit einem automatisierten KI-Assistenten. Dieses Gespräch kann aufgezeichnet werden.",
		"Sie chatten mit einem automatisierten KI-Assistenten."},
	"fr": {"Bonjour, vous parlez avec un assistant IA automatisé. Cet appel peut être enregistré.",
		"Vous discutez avec un assistant IA automatisé."},
	"es": {"Hola, está hablando con un asistente de IA automatizado. Esta llamada puede ser grabada.",
		"Está chateando con un asistente de IA automatizado."},
}

// DefaultDisclosure is the platform's default disclosure text for a channel type (a
// blueprint channel type such as "webchat" or "telco_voice", or "api") and an agent language
// (a BCP 47 tag; only its primary subtag counts). english reports the fallback to English for
// a language without its own default.
func DefaultDisclosure(channel, language string) (text string, english bool) {
	primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(language)), "-")
	d, ok := disclosureDefaults[primary]
	if !ok {
		d = disclosureDefaults["en"]
	}
	if channel == string(blueprint.ChannelTelcoVoice) {
		return d.voice, !ok
	}
	return d.text, !ok
}

// DisclosureFor is the disclosure block as DisclosureOf reports it, with the text the given
// channel shows: the agent's own text on every channel, else the platform default for that
// channel and the agent's language. Callers that put the disclosure into a conversation use
// this one, so a chat never reads the text meant for calls.
func DisclosureFor(a store.Agent, bp *blueprint.Blueprint, deployed map[string]uuid.UUID, channel string) Disclosure {
	return disclosure(a, bp.Agent.Language, channel, hasVoice(bp, deployed))
}

// fallbackNote tells the builder that the default text is English for their language.
func fallbackNote(language string) string {
	return " The platform has no default text in language \"" + language + "\", so the default is in English; set disclosureText to use your own."
}
