package manage

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/google/uuid"

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
	// Run decodes the arguments (unknown fields are refused) and runs the operation in the
	// workspace. The result is the operation's typed result.
	Run func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (any, error)
}

// Operations lists the agent-management operations. Creating an agent and crawling a site
// add things and are safe; changing, deploying and deleting agents are risky and need the
// user's confirmation in a turn.
func (s *Service) Operations() []Operation {
	return []Operation{
		op("create_agent", "Create an agent from a full YAML blueprint. Every blueprint error is reported with its path and line.", agent.Safe, s.CreateAgent),
		op("update_agent", "Change some fields of an agent; fields not given stay as they are.", agent.Risky, s.UpdateAgent),
		op("get_agent", "Get an agent by agent_id (preferred), or search agents by name (case-insensitive).", agent.Safe, s.GetAgent),
		op("list_agents", "List the workspace's agents, optionally by status.", agent.Safe, s.ListAgents),
		op("crawl_website", "Crawl a website (same host, breadth-first) into the agent's knowledge base. The crawl runs in the background.", agent.Safe, s.CrawlWebsite),
		op("generate_test_link", "Get a link to try the agent, and its webchat embed script once deployed to webchat.", agent.Safe, s.GenerateTestLink),
		op("deploy_agent", "Deploy an agent to a channel type, or to a channel (channel_id) with its inbound seat rules.", agent.Risky, s.DeployAgent),
		op("get_conversations", "List an agent's most recent conversations.", agent.Safe, s.GetConversations),
		op("get_analytics", "Count an agent's conversations and their labels.", agent.Safe, s.GetAnalytics),
		op("delete_agent", "Permanently delete an agent, its knowledge base and its deployments.", agent.Risky, s.DeleteAgent),
	}
}

// op registers an operation; its input schema is derived from In.
func op[In, Out any](name, description string, class agent.Class, run func(context.Context, uuid.UUID, In) (Out, error)) Operation {
	return Operation{Name: name, Description: description, Schema: inputSchema[In](), Class: class,
		Run: func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (any, error) {
			var in In
			if err := decodeArgs(args, &in); err != nil {
				return nil, apierr.Invalid("", "invalid_arguments", "The arguments do not fit the input schema of %s: %v", name, err)
			}
			return run(ctx, ws, in)
		}}
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
		tools = append(tools, agent.Tool{Name: o.Name, Description: o.Description, Parameters: o.Schema, Class: o.Class,
			Run: func(ctx context.Context, c agent.Call) (any, error) { return o.Run(ctx, c.WorkspaceID, c.Arguments) }})
	}
	return tools
}
