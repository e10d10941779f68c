package dashboard

import (
	"net/http"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/manage"
	"switchboard/store"
)

// routeBuilder registers the Build page and the agent page's editor and buttons, each under
// the permission its operation takes on MCP and /api.
func (h *dash) routeBuilder(mux *http.ServeMux) {
	mux.HandleFunc("GET "+Prefix+"/build", h.signed(access.Read, h.buildPage))
	mux.HandleFunc("POST "+Prefix+"/agents/{id}/blueprint", h.signed(access.AgentsWrite, h.saveBlueprint))
	mux.HandleFunc("POST "+Prefix+"/agents/{id}/deployments", h.signed(access.Deploy, h.deployAgent))
	mux.HandleFunc("POST "+Prefix+"/agents/{id}/deployments/{deployment}/undeploy", h.signed(access.Deploy, h.undeployAgent))
	mux.HandleFunc("POST "+Prefix+"/agents/{id}/sources/{source}/recrawl", h.signed(access.Crawl, h.recrawl))
}

// deployAgent deploys the agent on a channel type (deploy_agent with `channel`).
func (h *dash) deployAgent(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id := r.PathValue("id")
	res, err := h.Ops.DeployAgent(r.Context(), p.WorkspaceID, manage.DeployAgentInput{AgentID: id,
		Channel: blueprint.ChannelType(r.PostFormValue("channel"))})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/agents/"+id+"#deployments", res.Message)
}

// undeployAgent removes one deployment of the agent.
func (h *dash) undeployAgent(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id := r.PathValue("id")
	res, err := h.Ops.UndeployAgent(r.Context(), p.WorkspaceID, manage.UndeployAgentInput{AgentID: id, DeploymentID: r.PathValue("deployment")})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/agents/"+id+"#deployments", res.Message)
}

// recrawl crawls a website source of the agent again, at its address and depth
// (crawl_website).
func (h *dash) recrawl(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id := r.PathValue("id")
	got, err := h.Ops.GetAgent(r.Context(), p.WorkspaceID, manage.GetAgentInput{AgentID: id})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	var source *manage.SourceView
	for i, s := range got.Agent.KnowledgeSources {
		if s.ID == r.PathValue("source") && s.Type == string(blueprint.SourceWebsiteCrawl) && s.URL != nil {
			source = &got.Agent.KnowledgeSources[i]
		}
	}
	if source == nil {
		h.fail(w, r, p, apierr.NotFound("source", "source_not_found", "The agent has no website source with that id."))
		return
	}
	res, err := h.Ops.CrawlWebsite(r.Context(), p.WorkspaceID, manage.CrawlWebsiteInput{AgentID: id, URL: *source.URL, Depth: source.Depth})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/agents/"+id+"#knowledge", res.Message)
}
