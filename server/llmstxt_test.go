package server_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/require"

	"switchboard/openapi"
)

// platform.md: "GET /llms.txt | machine-readable description, no auth". It is rendered at
// start-up from the OpenAPI documents and the MCP tool registry (issue 46, item 7), so it
// names every route of the three documents and every tool /mcp lists.
func TestLLMsTxtNamesEveryRouteAndTool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, raw := b.do(t, http.MethodGet, "/llms.txt", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	body := string(raw)

	routes := 0
	for name, doc := range map[string][]byte{"v1.yaml": openapi.V1YAML, "api.yaml": openapi.APIYAML, "embed.yaml": openapi.EmbedYAML} {
		spec, err := openapi3.NewLoader().LoadFromData(doc)
		require.NoError(t, err, name)
		require.Contains(t, body, "/openapi/"+name)
		for path, item := range spec.Paths.Map() {
			for method := range item.Operations() {
				require.Contains(t, body, "`"+method+" "+path+"`", "%s names %s %s", "/llms.txt", method, path)
				routes++
			}
		}
	}
	require.Greater(t, routes, 50)
	for _, route := range []string{"POST /mcp", "GET /health", "GET /ready", "GET /llms.txt", "/changelog", "/schemas/blueprint.json", "/docs/errors"} {
		require.Contains(t, body, route, "the routes outside the OpenAPI documents")
	}

	// The tools as /mcp itself lists them: the agent tools, the bulk tools, confirm_action.
	listed, err := b.mcp(t, b.url, b.key).c.ListTools(context.Background(), mcp.ListToolsRequest{})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(listed.Tools), 18)
	for _, tool := range listed.Tools {
		require.Contains(t, body, "- `"+tool.Name+"`: ", "/llms.txt names the MCP tool %s", tool.Name)
	}
	require.Contains(t, body, "Authorization: Bearer sk-svc_")
}
