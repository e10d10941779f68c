package manage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
)

// Operation is one management operation as every surface registers it: the MCP tool server,
// the builder assistant's own tool loop (and, by hand-written routes, /api).
type Operation struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the arguments, derived from the input type
	Class       agent.Class     // what the builder assistant may do without the user's say-so
	// Permission is what the caller's role must hold (access table), on every surface.
	Permission access.Permission
	// Run decodes the arguments (unknown fields are refused) and runs the operation in the
	// workspace. The result is the operation's typed result.
	Run func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (any, error)
	// Describe, for operations a turn parks, checks the arguments and says in one sentence
	// what the call will do, for the user to confirm.
	Describe func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (string, error)
	// Prepare and Recheck, for operations a turn parks, are agent.Tool's (package bulk: the
	// count a bulk action matched is parked with it, and a confirmation is aborted when the
	// set has grown by more than 10% since).
	Prepare func(ctx context.Context, c agent.Call) (agent.Prepared, error)
	Recheck func(ctx context.Context, c agent.Call) (resolution, why string, err error)
	// RunCall, when set, replaces Run where the surface knows more of the call than its
	// workspace (the conversation a parked call was confirmed in).
	RunCall func(ctx context.Context, c agent.Call) (any, error)
	// ParksOnMCP makes an MCP call park the action too (the destructive bulk tools): the
	// client confirms it with confirm_action. Other MCP calls run at once.
	ParksOnMCP bool
}

// NewOperation registers an operation written outside this package (package bulk); its input
// schema is derived from In, as for the agent operations.
func NewOperation[In, Out any](name, description string, class agent.Class, perm access.Permission, run func(context.Context, uuid.UUID, In) (Out, error)) Operation {
	return op(name, description, class, perm, run)
}

// InputSchema is the JSON Schema of an input type In, derived as for every operation; for
// operations that decode their arguments themselves (package bulk).
func InputSchema[In any]() json.RawMessage { return inputSchema[In]() }

// DecodeInput reads the arguments of the operation name into In, as every operation does:
// unknown keys are refused, with a 400 naming the operation.
func DecodeInput[In any](name string, args json.RawMessage) (In, error) {
	return decodeInput[In](name, args)
}

// Register adds operations written outside this package to every surface that lists
// Operations (the MCP tools, the builder assistant's tools). Call it while wiring, before
// the surfaces are built.
func (s *Service) Register(ops ...Operation) {
	s.extra = append(s.extra, ops...)
}

func (o Operation) describedBy(d func(context.Context, uuid.UUID, json.RawMessage) (string, error)) Operation {
	o.Describe = d
	return o
}

// Operations lists the agent-management operations with the permission each needs. Creating
// an agent and crawling a site add things (a stored turn runs them at once); changing,
// deploying and deleting agents are risky (a stored turn parks them for the user's `YES
// <code>`); ephemeral turns are offered only the read-only ones.
func (s *Service) Operations() []Operation {
	return append([]Operation{
		op("create_agent", "Create an agent from a full YAML blueprint. Every blueprint error is reported with its path and line.", agent.Change, access.AgentsWrite, s.CreateAgent),
		op("update_agent", "Change some fields of an agent; fields not given stay as they are.", agent.Risky, access.AgentsWrite, s.UpdateAgent).
			describedBy(describe(s.describeUpdate)),
		op("get_agent", "Get an agent by agent_id (preferred), or search agents by name (case-insensitive).", agent.Safe, access.Read, s.GetAgent),
		op("list_agents", "List the workspace's agents, optionally by status.", agent.Safe, access.Read, s.ListAgents),
		op("crawl_website", "Crawl a website (same host, breadth-first) into the agent's knowledge base. The crawl runs in the background.", agent.Change, access.Crawl, s.CrawlWebsite),
		op("generate_test_link", "Get a link to try the agent, and its webchat embed script once deployed to webchat.", agent.Safe, access.TestLinks, s.GenerateTestLink),
		op("deploy_agent", "Deploy an agent to a channel type, or to a channel (channel_id) with its inbound seat rules.", agent.Risky, access.Deploy, s.DeployAgent).
			describedBy(describe(s.describeDeploy)),
		op("get_conversations", "List an agent's most recent conversations.", agent.Safe, access.Read, s.GetConversations),
		op("get_analytics", "Count an agent's conversations and their labels.", agent.Safe, access.Read, s.GetAnalytics),
		op("delete_agent", "Permanently delete an agent, its knowledge base and its deployments.", agent.Risky, access.AgentsDelete, s.DeleteAgent).
			describedBy(describe(s.describeDelete)),
	}, s.extra...)
}

// op registers an operation; its input schema is derived from In.
func op[In, Out any](name, description string, class agent.Class, perm access.Permission, run func(context.Context, uuid.UUID, In) (Out, error)) Operation {
	return Operation{Name: name, Description: description, Schema: inputSchema[In](), Class: class, Permission: perm,
		Run: func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (any, error) {
			in, err := decodeInput[In](name, args)
			if err != nil {
				return nil, err
			}
			return run(ctx, ws, in)
		}}
}

// describe adapts a typed summary function to Operation.Describe.
func describe[In any](d func(context.Context, uuid.UUID, In) (string, error)) func(context.Context, uuid.UUID, json.RawMessage) (string, error) {
	return func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (string, error) {
		in, err := decodeInput[In]("the tool", args)
		if err != nil {
			return "", err
		}
		return d(ctx, ws, in)
	}
}

func decodeInput[In any](name string, args json.RawMessage) (In, error) {
	var in In
	if err := decodeArgs(args, &in); err != nil {
		return in, apierr.Invalid("", "invalid_arguments", "The arguments do not fit the input schema of %s: %s", name, describeDecodeError(err))
	}
	return in, nil
}

// describeDecodeError says what is wrong with the arguments in JSON's terms: the field's path
// and the JSON type it needs, never the Go type it decodes into (bulk.ConversationStatus means
// nothing to a caller).
func describeDecodeError(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		where := typeErr.Field
		if where == "" {
			where = "the arguments"
		}
		return fmt.Sprintf("%s must be %s, not %s", where, jsonKind(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return "the arguments are not valid JSON (" + syntaxErr.Error() + ")"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the arguments are not valid JSON (they end too soon)"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON type a Go type is read from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16,
		reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

func decodeArgs(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// AgentTools are the operations as tools of the builder assistant's turns.
func (s *Service) AgentTools() []agent.Tool {
	var tools []agent.Tool
	for _, o := range s.Operations() {
		t := agent.Tool{Name: o.Name, Description: o.Description, Parameters: o.Schema, Class: o.Class, Permission: o.Permission,
			Run:     func(ctx context.Context, c agent.Call) (any, error) { return o.Run(ctx, c.WorkspaceID, c.Arguments) },
			Prepare: o.Prepare, Recheck: o.Recheck}
		if o.RunCall != nil {
			t.Run = o.RunCall
		}
		if o.Describe != nil {
			t.Describe = func(ctx context.Context, c agent.Call) (string, error) {
				return o.Describe(ctx, c.WorkspaceID, c.Arguments)
			}
		}
		tools = append(tools, t)
	}
	return tools
}
