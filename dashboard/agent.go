package dashboard

import (
	"net/http"

	"switchboard/access"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// The agent page: the agent's facts and status, its blueprint in an editor (Validate and
// Save, agent_editor.go), its AI disclosure, its knowledge sources with their state and a
// re-crawl button, its deployments per channel with deploy and undeploy (agent_actions.go),
// the test chat, its latest conversations and its analytics (agent_analytics.go). Every
// button posts a plain form to a handler that calls the same operation as the MCP tool and
// the /api route, and comes back here with a flash (post, redirect, get).

// agentCSP is the dashboard's policy plus this site's scripts (static/copy.js, the snippets'
// Copy buttons; static/agent.js, the editor's line numbers).
const agentCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// agentConversations is how many of the agent's conversations the page lists.
const agentConversations = 10

type agentData struct {
	Agent      *manage.AgentView
	Disclosure *manage.Disclosure // get_agent's disclosure block
	// Deployments are the agent's deployments, one per channel type; Webchat those on
	// webchat, each with its embed snippet and allowed origins.
	Deployments []manage.DeploymentView
	Webchat     []manage.DeploymentView
	// Undeployed are the channel types the agent is not deployed on, for the deploy form.
	Undeployed    []string
	Editor        blueprintEditor
	Conversations []store.ConversationRow
	Analytics     agentAnalytics
	CanWrite      bool // access.AgentsWrite
	CanDeploy     bool // access.Deploy
	CanCrawl      bool // access.Crawl
}

func (h *dash) agent(w http.ResponseWriter, r *http.Request, p store.Principal) {
	d, err := h.agentPage(r, p, r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	if d.Editor.YAML, err = h.blueprintYAML(r, p, d.Agent.ID); err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.renderAgent(w, r, p, http.StatusOK, d)
}

func (h *dash) renderAgent(w http.ResponseWriter, r *http.Request, p store.Principal, status int, d agentData) {
	d.Editor.number()
	w.Header().Set("Content-Security-Policy", agentCSP)
	h.render(w, r, status, "agent", view{Title: d.Agent.Name, Nav: "agents", P: p, Data: d})
}

// agentPage gathers everything the page shows but the editor's text.
func (h *dash) agentPage(r *http.Request, p store.Principal, id string) (agentData, error) {
	ctx := r.Context()
	res, err := h.Ops.GetAgent(ctx, p.WorkspaceID, manage.GetAgentInput{AgentID: id})
	if err != nil {
		return agentData{}, err
	}
	a := res.Agent
	deps, err := h.Ops.ListDeployments(ctx, p.WorkspaceID, manage.ListDeploymentsInput{AgentID: a.ID})
	if err != nil {
		return agentData{}, err
	}
	role := p.Access()
	d := agentData{Agent: a, Disclosure: res.Disclosure, Deployments: deps.Deployments, CanWrite: role.Allows(access.AgentsWrite),
		CanDeploy: role.Allows(access.Deploy), CanCrawl: role.Allows(access.Crawl)}
	deployed := map[string]bool{}
	for _, dep := range deps.Deployments {
		deployed[dep.Channel] = true
		if dep.EmbedSnippet != nil {
			d.Webchat = append(d.Webchat, dep)
		}
	}
	for _, c := range blueprint.Strings(blueprint.ChannelTypes()) {
		if !deployed[c] {
			d.Undeployed = append(d.Undeployed, c)
		}
	}
	if d.Analytics, d.Conversations, err = h.analyticsOf(r, p, a); err != nil {
		return agentData{}, err
	}
	return d, nil
}
