package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func (b *testBundle) postYAML(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	return resp, readAll(t, resp)
}

func TestAPIAgentsShareTheOperationsOfTheTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.postYAML(t, "/api/agents", voiceAgent)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var created struct{ AgentID, AgentName, TestURL string }
	require.NoError(t, json.Unmarshal(raw, &created))
	require.Equal(t, "Front Desk", created.AgentName)

	body, _ := json.Marshal(map[string]string{"yaml": agentYAML("Second")})
	resp, raw = b.do(t, http.MethodPost, "/api/agents", "Bearer "+b.key, string(body))
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))

	resp, raw = b.postYAML(t, "/api/agents", strings.Replace(voiceAgent, "tone: friendly", "tone: grumpy", 1))
	e := errorOf(t, resp, raw, http.StatusBadRequest)
	require.Equal(t, "yaml", str(e.Param))
	require.Equal(t, "invalid_blueprint", str(e.Code))
	require.Contains(t, e.Message, "agent.persona.tone (line 6)")

	_, raw = b.get(t, "/api/agents")
	require.Contains(t, string(raw), `"total":2`)
	_, raw = b.get(t, "/api/agents?status=disabled")
	require.Contains(t, string(raw), `"total":0`)

	_, raw = b.get(t, "/api/agents/"+created.AgentID)
	var got struct {
		Agent      map[string]any
		Disclosure map[string]any
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, "Ava", got.Agent["displayName"])
	require.Equal(t, true, got.Disclosure["applies"])

	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+created.AgentID, "Bearer "+b.key, `{"greeting":"Good morning!","disclosureText":"AI here.","status":"disabled"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, "Good morning!", got.Agent["greeting"])
	require.Equal(t, "disabled", got.Agent["status"])
	require.Equal(t, "AI here.", got.Disclosure["spoken_text"])
	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+created.AgentID, "Bearer "+b.key, `{"disclosureText":null}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.NoError(t, json.Unmarshal(raw, &got))
	require.Equal(t, true, got.Disclosure["using_default_text"], "null restores the default text")

	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+created.AgentID, "Bearer "+b.key, `{"voice":"deep"}`)
	require.Equal(t, "voice", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
	resp, raw = b.do(t, http.MethodPatch, "/api/agents/"+created.AgentID, "Bearer "+b.key, `{"maxTokens":9000}`)
	require.Equal(t, "maxTokens", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))

	ws2, err := b.store.CreateWorkspace(context.Background(), "rival", 1_000_000_000)
	require.NoError(t, err)
	resp, raw = b.do(t, http.MethodGet, "/api/agents/"+created.AgentID, "Bearer "+b.newKey(t, ws2, "owner"), "")
	e = errorOf(t, resp, raw, http.StatusNotFound)
	require.Equal(t, "id", str(e.Param))
	resp, raw = b.get(t, "/api/agents/not-a-uuid")
	require.Equal(t, "id", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
}

func TestAPIChannels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"telco_voice","name":"Support line"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	resp, raw = b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"pigeon","name":"Coop"}`)
	require.Equal(t, "provider", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
	_, raw = b.get(t, "/api/channels")
	var list struct{ Data []map[string]any }
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Data, 1)
	require.Nil(t, list.Data[0]["inboundAgentId"])
}

func TestBlueprintSchemaIsServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.do(t, http.MethodGet, "/schemas/blueprint.json", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(raw, &schema))
	require.Contains(t, schema, "$schema")
	resp, _ = b.do(t, http.MethodGet, "/openapi/api.yaml", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
