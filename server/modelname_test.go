package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
)

// platform.md, the blueprint: "agent.llm.model | string | yes". Any model name is accepted;
// one the platform does not serve is stored with a warning naming the served models,
// get_agent shows it as given, and a turn of that agent fails with model_not_found instead
// of running a guessed model (issue 46, item 6).
func TestAnyModelNameIsAcceptedAndItsTurnsFailClearly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.mcp(t, b.url, b.key)
	yaml := strings.Replace(agentYAML("Fine tune"), "model: beta-5.4-mini", "model: acme-fine-tune-7", 1)

	created := s.ok("create_agent", map[string]any{"yaml": yaml})
	id := created["agentId"].(string)
	warnings := created["warnings"].([]any)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], `"acme-fine-tune-7" is not a model this platform serves`)
	require.Contains(t, warnings[0], "beta-5.4, beta-5.4-mini", "the warning names the served models")

	agent := s.ok("get_agent", map[string]any{"agent_id": id})["agent"].(map[string]any)
	require.Equal(t, "acme-fine-tune-7", agent["llmModel"], "shown as given")
	require.Len(t, agent["warnings"], 1)
	_, raw := b.get(t, "/api/agents/"+id)
	require.Contains(t, string(raw), `"llmModel":"acme-fine-tune-7"`)

	// A turn fails clearly, and no vendor is called with a guess.
	resp, raw := b.chatRaw(t, id, map[string]any{"message": "hello"})
	require.Equal(t, "model_not_found", errorOf(t, resp, raw, http.StatusBadRequest).codeOrEmpty(), string(raw))
	for _, f := range catalog.Families {
		require.Empty(t, b.vendors[f].Requests(), "no model was guessed")
	}

	// update_agent to a served model clears the warning and the agent answers; back to an
	// unserved name warns again.
	updated := s.ok("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"llmModel": "beta-5.4"}})
	require.Nil(t, updated["warnings"])
	require.NotEmpty(t, b.chat(t, id, map[string]any{"message": "hello"}).Reply)
	updated = s.ok("update_agent", map[string]any{"agent_id": id, "updates": map[string]any{"llmModel": "acme-fine-tune-8"}})
	require.Len(t, updated["warnings"], 1)
	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+id, "Bearer "+b.key, `{"llmModel":"acme-fine-tune-9"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), `acme-fine-tune-9\" is not a model this platform serves`)

	// A model the platform serves for another provider is a mistake it can name: refused.
	s.fails("create_agent", map[string]any{"yaml": strings.Replace(yaml, "acme-fine-tune-7", "alpha-haiku-4-5", 1)}, "invalid_blueprint")
}
