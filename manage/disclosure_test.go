package manage_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// TestDefaultDisclosure pins the platform's default texts per channel and language: calls are
// told they may be recorded, text channels never are, and unknown languages get English.
func TestDefaultDisclosure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		channel, language, want string
		english                 bool
	}{
		{"telco_voice", "en", manage.DefaultDisclosureText, false},
		{"webchat", "en-US", "You are chatting with an automated AI assistant.", false},
		{"sms", "en", "You are chatting with an automated AI assistant.", false},
		{"api", "en", "You are chatting with an automated AI assistant.", false},
		{"telco_voice", "de-DE", "Hallo, Sie sprechen mit einem automatisierten KI-Assistenten. Dieses Gespräch kann aufgezeichnet werden.", false},
		{"webchat", "de", "Sie chatten mit einem automatisierten KI-Assistenten.", false},
		{"telco_voice", "fr-CA", "Bonjour, vous parlez avec un assistant IA automatisé. Cet appel peut être enregistré.", false},
		{"msgapp_1", "FR", "Vous discutez avec un assistant IA automatisé.", false},
		{"telco_voice", "es-MX", "Hola, está hablando con un asistente de IA automatizado. Esta llamada puede ser grabada.", false},
		{"webchat", "es", "Está chateando con un asistente de IA automatizado.", false},
		{"webchat", "it", "You are chatting with an automated AI assistant.", true},
		{"telco_voice", "pt-BR", manage.DefaultDisclosureText, true},
	} {
		got, english := manage.DefaultDisclosure(tc.channel, tc.language)
		require.Equal(t, tc.want, got, "%s %s", tc.channel, tc.language)
		require.Equal(t, tc.english, english, "%s %s", tc.channel, tc.language)
	}
	// No text channel in any language mentions a call or a recording.
	for _, lang := range []string{"en", "de", "fr", "es", "it"} {
		for _, ch := range []string{"webchat", "sms", "msgapp_1", "api"} {
			text, _ := manage.DefaultDisclosure(ch, lang)
			for _, word := range []string{"call", "record", "Gespräch", "aufgezeichnet", "appel", "enregistr", "llamada", "grabad"} {
				require.NotContains(t, strings.ToLower(text), strings.ToLower(word), "%s %s", ch, lang)
			}
		}
	}
}

// TestDisclosureFor: the text a conversation shows follows its channel; the agent's own text
// is used on every channel.
func TestDisclosureFor(t *testing.T) {
	t.Parallel()
	bp := &blueprint.Blueprint{Agent: blueprint.Agent{Language: "de-AT",
		Channels: []blueprint.Channel{{Type: blueprint.ChannelTelcoVoice}}}}
	a := store.Agent{DisclosureEnabled: true}
	chat := manage.DisclosureFor(a, bp, nil, "webchat")
	require.True(t, chat.Applies)
	require.Equal(t, "Sie chatten mit einem automatisierten KI-Assistenten.", chat.SpokenText)
	voice := manage.DisclosureFor(a, bp, nil, "telco_voice")
	require.Contains(t, voice.SpokenText, "aufgezeichnet")
	require.Equal(t, voice, manage.DisclosureOf(a, bp, map[string]uuid.UUID{}), "get_agent reports the spoken text")

	own := "Ich bin eine KI."
	a.DisclosureText = &own
	require.Equal(t, own, manage.DisclosureFor(a, bp, nil, "webchat").SpokenText)
	require.Equal(t, own, manage.DisclosureFor(a, bp, nil, "telco_voice").SpokenText)
}

// TestDisclosureLanguageFallback: get_agent says when the default text is English because the
// agent's language has none, and stays quiet when the agent has its own text.
func TestDisclosureLanguageFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	for _, tc := range []struct {
		language, own string
	}{
		{language: "it"}, {language: "it", own: "Sono un assistente IA."}, {language: "fr"},
	} {
		yaml := strings.Replace(agentYAML("Agent "+tc.language+tc.own), "language: en", "language: "+tc.language, 1)
		created, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: yaml})
		require.NoError(t, err)
		if tc.own != "" {
			_, err = svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: created.AgentID,
				Updates: map[string]json.RawMessage{"disclosureText": json.RawMessage(`"` + tc.own + `"`)}})
			require.NoError(t, err)
		}
		res, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: created.AgentID})
		require.NoError(t, err)
		mentions := strings.Contains(res.Disclosure.Note, `no default text in language "it"`)
		require.Equal(t, tc.language == "it" && tc.own == "", mentions, res.Disclosure.Note)
	}
}
