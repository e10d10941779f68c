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

	"switchboard/access"
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
	workspace := func(context.Context) (mcp.Caller, bool) {
		return mcp.Caller{WorkspaceID: ws.ID, Role: access.Owner}, true
	}
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

// Tool arguments pass the same guard as HTTP bodies: a NUL character is a failure naming
// the argument (it used to reach PostgreSQL and come back as internal_error), and arguments
// nested deeper than 64 levels are refused before any operation decodes them.
func TestToolArgumentsAreGuarded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(ctx, "acme", 1)
	require.NoError(t, err)
	ops := manage.New(st, catalog.Default(), netguard.Guard{}, nil, "http://sb.test")
	workspace := func(context.Context) (mcp.Caller, bool) {
		return mcp.Caller{WorkspaceID: ws.ID, Role: access.Owner}, true
	}
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
		if out["success"] == false {
			require.True(t, res.IsError)
		}
		return out
	}
	var nested any = []any{}
	for range 100 {
		nested = []any{nested}
	}
	for _, tc := range []struct {
		tool        string
		args        map[string]any
		code, param string
	}{
		{"create_agent", map[string]any{"yaml": "agent:\n  name: A\x00"}, "nul_character", "yaml"},
		{"get_agent", map[string]any{"name": "Front\x00Desk"}, "nul_character", "name"},
		{"get_agent", map[string]any{"agent_id": "\x00"}, "nul_character", "agent_id"},
		{"update_agent", map[string]any{"agent_id": uuid.NewString(), "updates": map[string]any{"name": "x\x00"}}, "nul_character", "updates.name"},
		{"create_agent", map[string]any{"yaml": nested}, "nesting_too_deep", ""},
	} {
		failed := call(tc.tool, tc.args)
		require.Equal(t, false, failed["success"], tc.tool)
		e := failed["error"].(map[string]any)
		require.Equal(t, tc.code, e["code"], tc.tool)
		if tc.param != "" {
			require.Equal(t, tc.param, e["param"], tc.tool)
		}
	}
	// A blueprint's own "\0" is found by the blueprint decoder, with its path and line.
	failed := call("create_agent", map[string]any{"yaml": "agent:\n  name: \"A\\0\"\n"})
	require.Equal(t, "invalid_blueprint", failed["error"].(map[string]any)["code"])
	require.Contains(t, failed["error"].(map[string]any)["errors"], "agent.name (line 2): contains a NUL character (\\0), which is not accepted in text")
	require.Equal(t, map[string]any{"success": true, "agents": []any{}, "total": 0.0}, call("list_agents", nil))
}
