package dashboard

import (
	"net/http"

	"switchboard/access"
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

// recrawl crawls a website source of the agent again, at its address and depth: the same
// source, its pages replaced (manage.RecrawlSource).
func (h *dash) recrawl(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id := r.PathValue("id")
	res, err := h.Ops.RecrawlSource(r.Context(), p.WorkspaceID, id, r.PathValue("source"))
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/agents/"+id+"#knowledge", res.Message)
}
