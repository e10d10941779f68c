package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard/access"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/openapi"
)

func (b *testBundle) postYAML(t testing.TB, path, body string) (*http.Response, []byte) {
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
	// Without a carrier account (no TWILIO_* here), an SMS number is stored, needing setup.
	resp, raw := b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"sms","name":"Support line","config":{"phone_number":"+14155550100"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	resp, raw = b.do(t, http.MethodPost, "/api/channels", "Bearer "+b.key, `{"provider":"pigeon","name":"Coop"}`)
	require.Equal(t, "provider", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
	_, raw = b.get(t, "/api/channels")
	var list struct{ Data []map[string]any }
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Data, 1)
	require.Contains(t, list.Data[0], "inbound_agent_id")
	require.Nil(t, list.Data[0]["inbound_agent_id"])
	require.Equal(t, "needs_setup", list.Data[0]["status"])
	require.Contains(t, list.Data[0]["setup"], "This server has no carrier account")
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

// The /api contract is written by hand and cannot import Go, so this test holds each of its
// enumerations equal to the Go list it publishes (blueprint.Enums, manage's lists).
func TestAPIContractEnumsEqualTheGoLists(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.APIYAML)
	require.NoError(t, err)
	schemas := doc.Components.Schemas
	prop := func(schema string, path ...string) *openapi3.Schema {
		s := schemas[schema].Value
		for _, p := range path {
			if p == "[]" {
				s = s.Items.Value
				continue
			}
			require.Contains(t, s.Properties, p, "%s %v", schema, path)
			s = s.Properties[p].Value
		}
		return s
	}
	statuses := blueprint.Strings(manage.AgentStatuses())
	cases := []struct {
		name string
		got  *openapi3.Schema
		want []string
	}{
		{"ChannelType", schemas["ChannelType"].Value, blueprint.Strings(blueprint.ChannelTypes())},
		{"Role", schemas["Role"].Value, access.Names()},
		{"listAgents status", doc.Paths.Value("/api/agents").Get.Parameters.GetByInAndName("query", "status").Schema.Value, statuses},
		{"AgentSummary.status", prop("AgentSummary", "status"), statuses},
		{"CreatedAgent.status", prop("CreatedAgent", "status"), statuses},
		{"Agent.status", prop("Agent", "status"), statuses},
		{"Agent.tone", prop("Agent", "tone"), blueprint.Strings(blueprint.Tones())},
		{"Agent.llmProvider", prop("Agent", "llmProvider"), blueprint.Strings(blueprint.Providers())},
		{"Agent.deployments[]", prop("Agent", "deployments", "[]"), blueprint.Strings(blueprint.ChannelTypes())},
		{"Agent.knowledgeSources[].type", prop("Agent", "knowledgeSources", "[]", "type"), blueprint.Strings(blueprint.SourceTypes())},
		{"Agent.knowledgeSources[].status", prop("Agent", "knowledgeSources", "[]", "status"), manage.SourceStatuses()},
		{"Disclosure.mode", prop("Disclosure", "mode"), manage.DisclosureModes()},
		{"Channel.provider", prop("Channel", "provider"), blueprint.Strings(blueprint.ChannelTypes())},
		{"AgentUpdates.status", prop("AgentUpdates", "status"), statuses},
		{"AgentUpdates.tone", prop("AgentUpdates", "tone"), blueprint.Strings(blueprint.Tones())},
		{"AgentUpdates.llmProvider", prop("AgentUpdates", "llmProvider"), blueprint.Strings(blueprint.Providers())},
	}
	for _, c := range cases {
		var got []string
		for _, v := range c.got.Enum {
			got = append(got, v.(string))
		}
		require.Equal(t, c.want, got, c.name)
	}
}

// The contract's AgentUpdates (PATCH /api/agents/{id}) must offer exactly update_agent's
// fields, with the constraints of the tool schema derived from manage.AgentUpdates.
func TestAPIContractAgentUpdatesEqualTheTool(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.APIYAML)
	require.NoError(t, err)
	contract := doc.Components.Schemas["AgentUpdates"].Value
	tool := updateAgentToolSchema(t)
	require.Equal(t, tool.MinProperties, contract.MinProps)
	require.Equal(t, false, *tool.AdditionalProperties)
	require.Equal(t, false, *contract.AdditionalProperties.Has)
	require.Len(t, contract.Properties, len(tool.Properties))
	for name, want := range tool.Properties {
		require.Contains(t, contract.Properties, name)
		got := contract.Properties[name].Value
		require.Equal(t, want, keywordsOf(got), name)
	}
}

// toolKeywords are the keywords both dialects share (a null is `nullable` in OpenAPI 3.0 and
// a "null" type in JSON Schema).
type toolKeywords struct {
	Type      any      `json:"type"`
	Enum      []string `json:"enum"`
	Format    string   `json:"format"`
	MinLength *uint64  `json:"minLength"`
	MaxLength *uint64  `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MaxItems  *uint64  `json:"maxItems"`
	Items     *toolKeywords
}

type toolSchema struct {
	MinProperties        uint64                  `json:"minProperties"`
	AdditionalProperties *bool                   `json:"additionalProperties"`
	Properties           map[string]toolKeywords `json:"properties"`
}

func updateAgentToolSchema(t *testing.T) toolSchema {
	t.Helper()
	for _, o := range (&manage.Service{}).Operations() {
		if o.Name == "update_agent" {
			var s struct {
				Properties struct {
					Updates toolSchema `json:"updates"`
				} `json:"properties"`
			}
			require.NoError(t, json.Unmarshal(o.Schema, &s))
			return s.Properties.Updates
		}
	}
	t.Fatal("no update_agent operation")
	return toolSchema{}
}

// keywordsOf reads an OpenAPI 3.0 schema as the JSON Schema the tool publishes.
func keywordsOf(s *openapi3.Schema) toolKeywords {
	k := toolKeywords{Format: s.Format, MinLength: nonZero(s.MinLength), MaxLength: s.MaxLength,
		Minimum: s.Min, Maximum: s.Max, MaxItems: s.MaxItems}
	typ := s.Type.Slice()[0]
	k.Type = typ
	if s.Nullable {
		k.Type = []any{typ, "null"}
	}
	for _, v := range s.Enum {
		k.Enum = append(k.Enum, v.(string))
	}
	if s.Items != nil {
		items := keywordsOf(s.Items.Value)
		k.Items = &items
	}
	return k
}

func nonZero(n uint64) *uint64 {
	if n == 0 {
		return nil
	}
	return &n
}
