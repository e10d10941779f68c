// Package mcp exposes the agent-management operations as MCP tools (mark3labs/mcp-go,
// streamable HTTP). Each tool decodes its arguments into the operation's typed input, runs
// the operation in the caller's workspace, and answers with the operation's result as
// structured content. Failures are tool results too: {success: false, error: {code,
// message, param}}, never protocol errors and never internals.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/google/uuid"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/inputguard"
	"switchboard/manage"
	"switchboard/store"
)

// Caller is who calls a tool: the workspace whose data it acts on and the key's role.
type Caller struct {
	WorkspaceID uuid.UUID
	Role        access.Role
}

// Workspace tells the tools who calls them; the HTTP layer authenticates the caller and puts
// it in the request context.
type Workspace func(ctx context.Context) (Caller, bool)

// New returns the MCP server with the ten agent tools. Every caller sees all ten (a tool
// hidden from tools/list could not answer role_not_allowed: mcp-go's tool filter hides a
// tool from calls too); each description names the least role that may call it.
func New(ops *manage.Service, workspace Workspace, log *slog.Logger, opts ...Option) *server.MCPServer {
	s := server.NewMCPServer("switchboard", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithInstructions("Create, configure, deploy and inspect Switchboard agents. Agents are defined by a YAML blueprint; its JSON Schema is served at /schemas/blueprint.json. "+
			"Destructive bulk tools park an action: show its summary to the user, and call confirm_action with its action_id and code if they agree."))
	s.AddTools(Tools(ops, workspace, log, opts...)...)
	return s
}

// Confirmations park the calls of the tools that park on MCP (the destructive bulk tools)
// and run them on confirm_action; the turn pipeline (agent.Pipeline) is one.
type Confirmations interface {
	Park(ctx context.Context, c agent.Caller, tool string, args json.RawMessage) (told map[string]any, result any, err error)
	ConfirmAction(ctx context.Context, c agent.Caller, actionID, code string) (any, error)
}

// Option configures the tools.
type Option func(*toolkit)

// WithConfirmations lets the tools park actions and confirm_action confirm them; without
// it, a call that would park fails.
func WithConfirmations(c Confirmations) Option { return func(t *toolkit) { t.confirm = c } }

// Handler serves the tools over streamable HTTP. It is stateless, so any replica can answer
// any request.
func Handler(s *server.MCPServer) http.Handler {
	return server.NewStreamableHTTPServer(s, server.WithStateLess(true))
}

// Tools are the ten agent tools, for an MCP server (or mcptest). Each tool's input schema is
// the operation's, derived in manage from its Go input type; mcp-go's WithInputSchema[T] is
// not used because its schema generator keeps only descriptions and enums, and the tools
// publish lengths, bounds, formats and defaults too.
func Tools(ops *manage.Service, workspace Workspace, log *slog.Logger, opts ...Option) []server.ServerTool {
	t := toolkit{workspace: workspace, log: log}
	for _, o := range opts {
		o(&t)
	}
	var tools []server.ServerTool
	for _, o := range append(ops.Operations(), t.confirmOperation()) {
		tool := mcpgo.NewToolWithRawSchema(o.Name, o.Description+" Role needed: "+access.Needs(o.Permission).String()+" or above.", o.Schema)
		tool.Annotations = annotations(o)
		tools = append(tools, server.ServerTool{Tool: tool, Handler: t.handler(o)})
	}
	return tools
}

type toolkit struct {
	workspace Workspace
	log       *slog.Logger
	confirm   Confirmations
}

// handler runs one operation for a tool call, in the caller's workspace.
func (t toolkit) handler(o manage.Operation) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		caller, ok := t.workspace(ctx)
		if !ok {
			return failure(apierr.Unauthenticated("missing_api_key", "Send a workspace API key as `Authorization: Bearer sk-svc_...`.")), nil
		}
		// Single-agent tools run at once: an MCP client asks its user before it calls a tool.
		if err := access.Check(caller.Role, o.Permission, "The tool "+o.Name); err != nil {
			return t.failed(ctx, o.Name, err), nil
		}
		args, err := json.Marshal(req.GetRawArguments())
		if err != nil {
			// A tool's failure is a result the client reads (isError), not a protocol error.
			return failure(apierr.Invalid("", "invalid_arguments", "The arguments are not JSON.")), nil //nolint:nilerr
		}
		// The same guard as HTTP bodies: no NUL reaches PostgreSQL, no deep nesting an
		// operation's decoder.
		if err := inputguard.CheckJSON(args); err != nil {
			return t.failed(ctx, o.Name, err), nil
		}
		var out any
		switch {
		case o.ParksOnMCP:
			out, err = t.park(ctx, caller, o, args)
		case o.Name == confirmTool:
			out, err = t.confirmAction(ctx, caller, args)
		default:
			out, err = o.Run(ctx, caller.WorkspaceID, args)
		}
		if err != nil {
			return t.failed(ctx, o.Name, err), nil
		}
		text, _ := json.Marshal(out)
		return mcpgo.NewToolResultStructured(out, string(text)), nil
	}
}

// toolError is the error object of a failed tool result.
type toolError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Param   string   `json:"param,omitempty"`
	Hint    string   `json:"hint,omitempty"`   // what to do next, when the error says
	Errors  []string `json:"errors,omitempty"` // each blueprint error, with its path and line
}

type failed struct {
	Success bool      `json:"success"`
	Error   toolError `json:"error"`
}

func (t toolkit) failed(ctx context.Context, tool string, err error) *mcpgo.CallToolResult {
	e := apierr.As(err)
	if u := store.Unavailability(err); u != nil {
		e = u // PostgreSQL out of reach: the tool may be called again shortly
	}
	if e == nil || e.Kind == apierr.KindInternal {
		t.log.ErrorContext(ctx, "tool failed", slog.String("tool", tool), slog.String("error", err.Error()))
		e = apierr.Internal(err)
		e.Code = "internal_error"
	}
	return failure(e)
}

func failure(e *apierr.Error) *mcpgo.CallToolResult {
	f := failed{Error: toolError{Code: e.Code, Message: e.Message, Param: e.Param, Hint: e.Hint}}
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

// annotations tell an MCP client what a tool does to the workspace, so it can ask its user
// before a destructive call.
func annotations(o manage.Operation) mcpgo.ToolAnnotation {
	readOnly := o.Class == agent.Safe
	destructive := o.Class == agent.Risky || o.Class == agent.Spend
	return mcpgo.ToolAnnotation{ReadOnlyHint: &readOnly, DestructiveHint: &destructive}
}
