package voice

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/twilio/twilio-go/twiml"

	"switchboard/sms"
)

// maxSpokenChars bounds a spoken reply: about forty seconds of speech.
const maxSpokenChars = 600

// Instructions tell the model it is on a phone call (converse.Request.Instructions).
const Instructions = "You are on a phone call: every reply is spoken aloud to the caller by a speech synthesizer. " +
	"Answer in one to three short, plain sentences. Never use Markdown, lists, headings, emojis or URLs: " +
	"name a website by its domain, such as example.com. Say numbers, prices, dates and times as a person says them, " +
	"such as \"nine in the morning\" or \"twenty dollars\"."

var urlPattern = regexp.MustCompile(`https?://[^\s)>\]]+`)

// Spoken is a reply as it is said on a call: Markdown removed, a URL said as its domain
// (never letter by letter), one line, at most maxSpokenChars (cut at a word).
func Spoken(reply string) string {
	text := sms.PlainText(reply)
	text = urlPattern.ReplaceAllStringFunc(text, func(raw string) string {
		u, err := url.Parse(strings.TrimRight(raw, ".,;:!?"))
		if err != nil || u.Hostname() == "" {
			return ""
		}
		return strings.TrimPrefix(u.Hostname(), "www.")
	})
	text = strings.Join(strings.Fields(text), " ")
	return sms.Cut(text, maxSpokenChars)
}

// speaker is the carrier's synthesized voice and speech recognition language for an agent
// language (a BCP 47 tag).
type speaker struct{ voice, language string }

// speakers are the carrier's neural voices per language; a tag with a region picks that
// region's voice, one without picks the language's first region.
var speakers = map[string]speaker{
	"en-us": {"Polly.Joanna-Neural", "en-US"}, "en-gb": {"Polly.Amy-Neural", "en-GB"}, "en-au": {"Polly.Olivia-Neural", "en-AU"},
	"de-de": {"Polly.Vicki-Neural", "de-DE"}, "fr-fr": {"Polly.Lea-Neural", "fr-FR"}, "fr-ca": {"Polly.Gabrielle-Neural", "fr-CA"},
	"es-es": {"Polly.Lucia-Neural", "es-ES"}, "es-mx": {"Polly.Mia-Neural", "es-MX"}, "es-us": {"Polly.Lupe-Neural", "es-US"},
	"it-it": {"Polly.Bianca-Neural", "it-IT"}, "pt-br": {"Polly.Camila-Neural", "pt-BR"}, "pt-pt": {"Polly.Ines-Neural", "pt-PT"},
	"nl-nl": {"Polly.Laura-Neural", "nl-NL"}, "ja-jp": {"Polly.Takumi-Neural", "ja-JP"},
}

var defaultRegion = map[string]string{"en": "en-us", "de": "de-de", "fr": "fr-fr", "es": "es-es", "it": "it-it", "pt": "pt-br",
	"nl": "nl-nl", "ja": "ja-jp"}

// speakerFor is the voice of an agent language; a language the carrier does not speak is
// spoken in US English.
func speakerFor(language string) speaker {
	tag := strings.ToLower(strings.TrimSpace(language))
	if s, ok := speakers[tag]; ok {
		return s
	}
	primary, _, _ := strings.Cut(tag, "-")
	if s, ok := speakers[defaultRegion[primary]]; ok {
		return s
	}
	return speakers["en-us"]
}

// say is a <Say> in the speaker's voice.
func (s speaker) say(text string) twiml.Element {
	return &twiml.VoiceSay{Message: text, Voice: s.voice, Language: s.language}
}
