// Package mcp exposes the agent-management operations as MCP tools (mark3labs/mcp-go,
// streamable HTTP). Each tool decodes its arguments into the operation's typed input, runs
// the operation in the caller's workspace, and answers with the operation's result as
// structured content. Failures are tool results too: {success: false, error: {code,
// message, param}}, never protocol errors and never internals.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
)

// Workspace tells the tools whose data they act on; the HTTP layer authenticates the caller
// and puts it in the request context.
type Workspace func(ctx context.Context) (uuid.UUID, bool)

// New returns the MCP server with the ten agent tools.
func New(ops *manage.Service, workspace Workspace, log *slog.Logger) *server.MCPServer {
	s := server.NewMCPServer("switchboard", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithInstructions("Create, configure, deploy and inspect Switchboard agents. Agents are defined by a YAML blueprint; its JSON Schema is served at /schemas/blueprint.json."))
	s.AddTools(Tools(ops, workspace, log)...)
	return s
}

// Tools are the ten agent tools, for an MCP server (or mcptest).
func Tools(ops *manage.Service, workspace Workspace, log *slog.Logger) []server.ServerTool {
	t := toolkit{workspace: workspace, log: log}
	var s tools
	add(&s, t, "create_agent", "Create an agent from a full YAML blueprint. Every blueprint error is reported with its path and line.", createAgentSchema, ops.CreateAgent)
	add(&s, t, "update_agent", "Change some fields of an agent; fields not given stay as they are.", updateAgentSchema, ops.UpdateAgent)
	add(&s, t, "get_agent", "Get an agent by agent_id (preferred), or search agents by name (case-insensitive).", getAgentSchema, ops.GetAgent)
	add(&s, t, "list_agents", "List the workspace's agents, optionally by status.", listAgentsSchema, ops.ListAgents)
	add(&s, t, "crawl_website", "Crawl a website (same host, breadth-first) into the agent's knowledge base. The crawl runs in the background.", crawlSchema, ops.CrawlWebsite)
	add(&s, t, "generate_test_link", "Get a link to try the agent, and its webchat embed script once deployed to webchat.", agentOnlySchema, ops.GenerateTestLink)
	add(&s, t, "deploy_agent", "Deploy an agent to a channel type, or to a channel (channel_id) with its inbound seat rules.", deploySchema, ops.DeployAgent)
	add(&s, t, "get_conversations", "List an agent's most recent conversations.", conversationsSchema, ops.GetConversations)
	add(&s, t, "get_analytics", "Count an agent's conversations and their labels.", agentOnlySchema, ops.GetAnalytics)
	add(&s, t, "delete_agent", "Permanently delete an agent, its knowledge base and its deployments.", agentOnlySchema, ops.DeleteAgent)
	return s
}

type tools = []server.ServerTool

// Handler serves the tools over streamable HTTP. It is stateless, so any replica can answer
// any request.
func Handler(s *server.MCPServer) http.Handler {
	return server.NewStreamableHTTPServer(s, server.WithStateLess(true))
}

type toolkit struct {
	workspace Workspace
	log       *slog.Logger
}

// add registers one operation as a tool.
func add[In, Out any](s *tools, t toolkit, name, description, schema string, op func(context.Context, uuid.UUID, In) (Out, error)) {
	tool := mcpgo.NewToolWithRawSchema(name, description, json.RawMessage(schema))
	*s = append(*s, server.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		ws, ok := t.workspace(ctx)
		if !ok {
			return failure(apierr.Unauthenticated("missing_api_key", "Send a workspace API key as `Authorization: Bearer sk-svc_...`.")), nil
		}
		var in In
		if err := decodeArgs(req.GetRawArguments(), &in); err != nil {
			return failure(apierr.Invalid("", "invalid_arguments", "The arguments do not fit the tool's input schema: %v", err)), nil
		}
		out, err := op(ctx, ws, in)
		if err != nil {
			return t.failed(ctx, name, err), nil
		}
		text, _ := json.Marshal(out)
		return mcpgo.NewToolResultStructured(out, string(text)), nil
	}})
}

func decodeArgs(raw any, into any) error {
	b, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	if string(b) == "null" {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// toolError is the error object of a failed tool result.
type toolError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Param   string   `json:"param,omitempty"`
	Errors  []string `json:"errors,omitempty"` // each blueprint error, with its path and line
}

type failed struct {
	Success bool      `json:"success"`
	Error   toolError `json:"error"`
}

func (t toolkit) failed(ctx context.Context, tool string, err error) *mcpgo.CallToolResult {
	e := apierr.As(err)
	if e == nil || e.Kind == apierr.KindInternal {
		t.log.ErrorContext(ctx, "tool failed", slog.String("tool", tool), slog.String("error", err.Error()))
		e = apierr.Internal(err)
		e.Code = "internal_error"
	}
	return failure(e)
}

func failure(e *apierr.Error) *mcpgo.CallToolResult {
	f := failed{Error: toolError{Code: e.Code, Message: e.Message, Param: e.Param}}
	if f.Error.Code == "" {
		f.Error.Code = e.Type()
	}
	var errs blueprint.Errors
	if errors.As(e.Err, &errs) {
		for _, be := range errs {
			f.Error.Errors = append(f.Error.Errors, be.Error())
		}
	}
	text, _ := json.Marshal(f)
	res := mcpgo.NewToolResultStructured(f, string(text))
	res.IsError = true
	return res
}
