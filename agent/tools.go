package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/llm"
)

// Class says how much a tool may do without the user's say-so.
type Class int

const (
	// Safe tools only read or compute; any turn may run them, ephemeral ones included.
	Safe Class = iota
	// Change tools add things the user asked for (an agent, a crawl); stored turns run them
	// at once, ephemeral turns are not offered them.
	Change
	// Risky tools change or delete things; a stored turn parks them for the user's
	// confirmation (`YES <code>`), an ephemeral turn is not offered them.
	Risky
	// Spend tools cost money; they park like risky ones, with the price in the summary.
	Spend
)

// parks reports whether a call of the class waits for the user's confirmation.
func (c Class) parks() bool { return c == Risky || c == Spend }

// Call is one invocation of a tool, scoped to the workspace whose turn made it.
type Call struct {
	WorkspaceID uuid.UUID
	Arguments   json.RawMessage
	// ConversationID is the conversation a parked call was confirmed in (uuid.Nil
	// otherwise), for a tool that must leave it alone (delete_conversations).
	ConversationID uuid.UUID
}

// Tool is a capability offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments
	Class       Class
	// Permission is what the turn's key must hold (access table) for the tool to be offered
	// or run; empty for tools any caller may use.
	Permission access.Permission
	Run        func(ctx context.Context, call Call) (any, error)
	// Describe, for tools that park, checks the arguments and says in one sentence what the
	// call will do, for the user to confirm (and, for spend tools, at what price). A failure
	// is given to the model instead of parking a call that could not run. Nil: a generic
	// summary naming the tool and its arguments.
	Describe func(ctx context.Context, call Call) (string, error)
	// Prepare, for tools that park, takes Describe's place when set: it may also rewrite the
	// arguments to park (recording what the call saw, e.g. how many rows a bulk action
	// matched), or answer at once with a Result when there is nothing to confirm.
	Prepare func(ctx context.Context, call Call) (Prepared, error)
	// Recheck, for tools that park, runs when the user confirms, before the action is
	// approved: a non-empty resolution (store.ActionAbortedDrift) ends the action that way
	// instead of running it, and why says so to the user.
	Recheck func(ctx context.Context, call Call) (resolution, why string, err error)
}

// Prepared is what Tool.Prepare decided: the summary and arguments to park, or a Result to
// answer with instead of parking.
type Prepared struct {
	Summary   string
	Arguments json.RawMessage
	Result    any
	// Details are added to what the caller is told of the parked call (a bulk action's
	// count and sample).
	Details map[string]any
}

// Tools is the catalog of tools a turn may offer, in a stable order.
type Tools struct {
	byName map[string]Tool
	order  []string
}

// NewTools builds a catalog; names must be unique.
func NewTools(tools ...Tool) (*Tools, error) {
	t := &Tools{byName: map[string]Tool{}}
	for _, tool := range tools {
		if _, dup := t.byName[tool.Name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", tool.Name)
		}
		t.byName[tool.Name] = tool
		t.order = append(t.order, tool.Name)
	}
	return t, nil
}

// Lookup returns the tool named name.
func (t *Tools) Lookup(name string) (Tool, bool) {
	tool, ok := t.byName[name]
	return tool, ok
}

// offerable says whether a turn of the given role and kind may see the tool at all: a tool
// the role may not use is not offered, and an ephemeral turn is offered safe tools only.
func offerable(tool Tool, role access.Role, ephemeral bool) bool {
	return role.Allows(tool.Permission) && (!ephemeral || tool.Class == Safe)
}

// Offered lists the tools a turn of the role may use.
func (t *Tools) Offered(role access.Role, ephemeral bool) []llm.Tool {
	var out []llm.Tool
	for _, name := range t.order {
		tool := t.byName[name]
		if offerable(tool, role, ephemeral) {
			out = append(out, llm.Tool{Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters})
		}
	}
	return out
}

// scope is who runs a turn's tool calls, and how a call that needs confirmation is parked.
type scope struct {
	workspaceID uuid.UUID
	role        access.Role
	ephemeral   bool
	// park parks a call of a risky or spend tool and returns what the model is told.
	park func(ctx context.Context, tool Tool, call llm.ToolCall) (any, error)
}

// run executes one tool call and returns the result to give back to the model. Failures are
// results too: the model reads them and can recover, the turn goes on. The checks repeat
// what Offered filtered: a model may name a tool it was not offered.
func (t *Tools) run(ctx context.Context, sc scope, call llm.ToolCall) llm.ToolResult {
	res := llm.ToolResult{CallID: call.ID, Name: call.Name}
	tool, ok := t.byName[call.Name]
	switch {
	case !ok:
		return failed(res, fmt.Sprintf("there is no tool named %q", call.Name))
	case !sc.role.Allows(tool.Permission):
		return failed(res, access.Refusal(sc.role, access.Needs(tool.Permission), "the tool "+tool.Name).Error())
	case sc.ephemeral && tool.Class != Safe:
		return failed(res, "this tool changes things, which an ephemeral turn may not do; continue in a stored conversation")
	}
	var out any
	var err error
	if tool.Class.parks() {
		out, err = sc.park(ctx, tool, call)
	} else {
		out, err = tool.Run(ctx, Call{WorkspaceID: sc.workspaceID, Arguments: call.Arguments})
	}
	if err != nil {
		return failed(res, err.Error())
	}
	body, err := json.Marshal(out)
	if err != nil {
		return failed(res, "the tool returned a result that is not JSON")
	}
	res.Content = string(body)
	return res
}

func failed(res llm.ToolResult, msg string) llm.ToolResult {
	body, _ := json.Marshal(map[string]string{"error": msg})
	res.Content, res.IsError = string(body), true
	return res
}
