package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type deploymentView struct {
	DeploymentID   string   `json:"deploymentId"`
	Channel        string   `json:"channel"`
	EmbedURL       *string  `json:"embedUrl"`
	EmbedSnippet   *string  `json:"embedSnippet"`
	AllowedOrigins []string `json:"allowedOrigins"`
}

type deploymentList struct {
	AgentID     string           `json:"agentId"`
	Deployments []deploymentView `json:"deployments"`
}

type testLink struct {
	TestURL  string  `json:"testUrl"`
	EmbedURL *string `json:"embedUrl"`
	Note     string  `json:"note"`
}

// TestDeploymentsOverREST deploys an agent to webchat, lists it with its snippet and allowed
// origins, fetches its test link and loader, and undeploys it, every answer checked against
// openapi/api.yaml by the harness's client.
func TestDeploymentsOverREST(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := b.newAgent(t, "Deployed agent")
	base := "/api/agents/" + agent

	list := decode[deploymentList](t, b.send(t, http.MethodGet, base+"/deployments", "", http.StatusOK))
	require.Equal(t, agent, list.AgentID)
	require.Empty(t, list.Deployments)
	link := decode[testLink](t, b.send(t, http.MethodPost, base+"/test-link", "", http.StatusOK))
	require.Equal(t, "http://switchboard.test/agents/"+agent+"/test", link.TestURL)
	require.Nil(t, link.EmbedURL)

	deployed := decode[struct {
		DeploymentID string `json:"deploymentId"`
		Channel      string `json:"channel"`
		Message      string `json:"message"`
	}](t, b.send(t, http.MethodPost, base+"/deployments",
		`{"channel":"webchat","config":{"allowed_origins":["https://shop.example"]}}`, http.StatusCreated))
	require.Equal(t, "webchat", deployed.Channel)
	require.Contains(t, deployed.Message, "is deployed to webchat")

	list = decode[deploymentList](t, b.send(t, http.MethodGet, base+"/deployments", "", http.StatusOK))
	require.Len(t, list.Deployments, 1)
	d := list.Deployments[0]
	embed := "http://switchboard.test/embed/" + deployed.DeploymentID + ".js"
	require.Equal(t, deployed.DeploymentID, d.DeploymentID)
	require.Equal(t, embed, *d.EmbedURL)
	require.Equal(t, `<script src="`+embed+`" async></script>`, *d.EmbedSnippet)
	require.Equal(t, []string{"https://shop.example"}, d.AllowedOrigins)

	link = decode[testLink](t, b.send(t, http.MethodPost, base+"/test-link", "", http.StatusOK))
	require.Equal(t, embed, *link.EmbedURL)
	require.Contains(t, link.Note, *d.EmbedSnippet)
	resp, raw := b.do(t, http.MethodGet, strings.TrimPrefix(embed, "http://switchboard.test"), "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, resp.Header.Get("Content-Type"), "javascript")

	undeployed := decode[struct {
		DeploymentID string `json:"deploymentId"`
	}](t, b.send(t, http.MethodDelete, base+"/deployments/"+deployed.DeploymentID, "", http.StatusOK))
	require.Equal(t, deployed.DeploymentID, undeployed.DeploymentID)
	list = decode[deploymentList](t, b.send(t, http.MethodGet, base+"/deployments", "", http.StatusOK))
	require.Empty(t, list.Deployments)
	resp, _ = b.do(t, http.MethodGet, strings.TrimPrefix(embed, "http://switchboard.test"), "", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an undeployed embed script no longer loads")

	resp, raw = b.do(t, http.MethodDelete, base+"/deployments/"+deployed.DeploymentID, "Bearer "+b.key, "")
	e := errorOf(t, resp, raw, http.StatusNotFound)
	require.Equal(t, "deployment_not_found", e.codeOrEmpty())
	require.Equal(t, "deploymentId", str(e.Param))
}

// TestDeployRefusals: deploy_agent's refusals over REST, with the path parameter named where
// the tool names agent_id.
func TestDeployRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agent := b.newAgent(t, "Refused agent")
	base := "/api/agents/" + agent + "/deployments"
	for _, c := range []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"no channel", base, `{}`, http.StatusBadRequest, "missing_parameter", "channel"},
		{"agent_id in the body", base, `{"channel":"webchat","agent_id":"` + agent + `"}`, http.StatusBadRequest, "", ""},
		{"unknown channel type", base, `{"channel":"fax"}`, http.StatusBadRequest, "", "channel"},
		{"no connected sms channel", base, `{"channel":"sms"}`, http.StatusConflict, "channel_not_connected", "channel"},
		{"unknown agent", "/api/agents/00000000-0000-4000-8000-000000000000/deployments", `{"channel":"webchat"}`, http.StatusNotFound, "", "id"},
		{"bad deployment id", base + "/not-a-uuid", "", http.StatusBadRequest, "", ""},
	} {
		method := http.MethodPost
		if c.body == "" {
			method = http.MethodDelete
		}
		resp, raw := b.do(t, method, c.path, "Bearer "+b.key, c.body)
		e := errorOf(t, resp, raw, c.status)
		if c.code != "" {
			require.Equal(t, c.code, e.codeOrEmpty(), c.name)
		}
		if c.param != "" {
			require.Equal(t, c.param, str(e.Param), c.name)
		}
	}
	resp, raw := b.do(t, http.MethodPost, "/api/agents/00000000-0000-4000-8000-000000000000/test-link", "Bearer "+b.key, "")
	require.Equal(t, "id", str(errorOf(t, resp, raw, http.StatusNotFound).Param))
}

// deploymentProbes are the role probes of the deployment routes
// (TestPermissionTableOnEverySurface).
func (b *testBundle) deploymentProbes(f fixtures) []probe {
	api := func(method, path, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome { return b.viaHTTP(t, method, path, key, body) }
	}
	base := "/api/agents/" + f.agentID
	return []probe{
		{"listDeployments", "viewer", api(http.MethodGet, base+"/deployments", "")},
		{"deployAgent", "admin", api(http.MethodPost, base+"/deployments", `{"channel":"webchat"}`)},
		{"undeployAgent", "admin", func(t *testing.T, key string) outcome {
			raw := b.send(t, http.MethodPost, base+"/deployments", `{"channel":"webchat"}`, http.StatusCreated)
			id := decode[struct {
				DeploymentID string `json:"deploymentId"`
			}](t, raw).DeploymentID
			return b.viaHTTP(t, http.MethodDelete, base+"/deployments/"+id, key, "")
		}},
		{"generateTestLink", "member", api(http.MethodPost, base+"/test-link", "")},
	}
}
