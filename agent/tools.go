package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"switchboard/llm"
)

// Class says how much a tool may do without the user's say-so.
type Class int

const (
	// Safe tools only read or compute; any turn may run them, ephemeral ones included.
	Safe Class = iota
	// Risky tools change or delete things; they need the user's confirmation.
	Risky
	// Spend tools cost money; they need the user's confirmation.
	Spend
)

// Call is one invocation of a tool, scoped to the workspace whose turn made it.
type Call struct {
	WorkspaceID uuid.UUID
	Arguments   json.RawMessage
}

// Tool is a capability offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments
	Class       Class
	Run         func(ctx context.Context, call Call) (any, error)
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

// offered lists the tools a turn may use: only safe ones for ephemeral turns.
func (t *Tools) offered(ephemeral bool) []llm.Tool {
	var out []llm.Tool
	for _, name := range t.order {
		tool := t.byName[name]
		if ephemeral && tool.Class != Safe {
			continue
		}
		out = append(out, llm.Tool{Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters})
	}
	return out
}

// run executes one tool call and returns the result to give back to the model. Failures are
// results too: the model reads them and can recover, the turn goes on.
func (t *Tools) run(ctx context.Context, workspaceID uuid.UUID, ephemeral bool, call llm.ToolCall) llm.ToolResult {
	res := llm.ToolResult{CallID: call.ID, Name: call.Name}
	tool, ok := t.byName[call.Name]
	switch {
	case !ok:
		return failed(res, fmt.Sprintf("there is no tool named %q", call.Name))
	case ephemeral && tool.Class != Safe:
		return failed(res, "this tool is not available in an ephemeral turn")
	case tool.Class != Safe:
		// Parking an action for a `YES <code>` confirmation arrives with the confirmations
		// feature; until then such tools never run from a turn.
		return failed(res, "this action needs the user's confirmation, which this turn cannot ask for")
	}
	out, err := tool.Run(ctx, Call{WorkspaceID: workspaceID, Arguments: call.Arguments})
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
