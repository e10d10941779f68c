package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/mcptest"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/manage"
	"switchboard/mcp"
	"switchboard/netguard"
	"switchboard/store/storetest"
)

// The tools in process (mcptest), over a real database: a tool call acts in the workspace
// the context names, and a failure is a result with success false.
func TestToolsInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(ctx, "acme", 1)
	require.NoError(t, err)
	ops := manage.New(st, catalog.Default(), netguard.Guard{}, nil, "http://sb.test")
	workspace := func(context.Context) (uuid.UUID, bool) { return ws.ID, true }
	srv, err := mcptest.NewServer(t, mcp.Tools(ops, workspace, slog.New(slog.NewTextHandler(io.Discard, nil)))...)
	require.NoError(t, err)
	defer srv.Close()

	call := func(name string, args map[string]any) map[string]any {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, args
		res, err := srv.Client().CallTool(ctx, req)
		require.NoError(t, err)
		raw, _ := json.Marshal(res.StructuredContent)
		var out map[string]any
		require.NoError(t, json.Unmarshal(raw, &out))
		return out
	}
	require.Equal(t, map[string]any{"success": true, "agents": []any{}, "total": 0.0}, call("list_agents", nil))
	failed := call("get_agent", map[string]any{"agent_id": uuid.NewString()})
	require.Equal(t, false, failed["success"])
	require.Equal(t, "agent_not_found", failed["error"].(map[string]any)["code"])
	bad := call("create_agent", map[string]any{"yaml": "agent: {}"})
	require.Equal(t, "invalid_blueprint", bad["error"].(map[string]any)["code"])
	require.NotEmpty(t, bad["error"].(map[string]any)["errors"])
}
