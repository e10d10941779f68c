package server

import (
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/store"
)

// testPageTemplate is the page behind an agent's test link. The agent's UUID in the path is
// the capability: it is unguessable and handed out only to the workspace by
// generate_test_link. Chatting from the page arrives with the chat surface.
var testPageTemplate = template.Must(template.New("test").Parse(`<!doctype html>
<html lang="{{.Language}}"><head><meta charset="utf-8"><title>{{.Name}} · Switchboard test</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
.bubble{background:#f1f3f5;border-radius:1rem;padding:.75rem 1rem;margin:1rem 0}.muted{color:#666}</style></head>
<body><h1>{{.DisplayName}}</h1><p class="muted">Test page of the agent “{{.Name}}” ({{.Status}})</p>
<div class="bubble">{{.Greeting}}</div>
{{if ne .Status "enabled"}}<p class="muted">This agent is disabled: it does not reply.</p>{{end}}
</body></html>`))

type testPageData struct {
	Name, DisplayName, Greeting, Language, Status string
}

func (s *Server) testPage(c echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return apierr.NotFound("id", "agent_not_found", "No such agent.")
	}
	a, err := s.store.AgentByIDAnyWorkspace(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("id", "agent_not_found", "No such agent.")
	}
	if err != nil {
		return err
	}
	var bp struct {
		Agent struct {
			Language string
			Persona  struct {
				DisplayName string `json:"display_name"`
				Greeting    string
			}
		}
	}
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return err
	}
	c.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
	c.Response().WriteHeader(http.StatusOK)
	return testPageTemplate.Execute(c.Response(), testPageData{Name: a.Name, DisplayName: bp.Agent.Persona.DisplayName,
		Greeting: bp.Agent.Persona.Greeting, Language: bp.Agent.Language, Status: a.Status})
}

// embedScript serves /embed/{deploymentId}.js: it adds the agent's chat widget (its test
// page, in a frame) to the page that includes it.
func (s *Server) embedScript(c echo.Context) error {
	id, err := uuid.Parse(strings.TrimSuffix(c.Param("file"), ".js"))
	if err != nil || !strings.HasSuffix(c.Param("file"), ".js") {
		return apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	}
	_, agentID, err := s.store.DeploymentAgent(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	}
	if err != nil {
		return err
	}
	src, _ := json.Marshal(s.cfg.PublicBaseURL + "/agents/" + agentID.String() + "/test")
	js := `(function(){var f=document.createElement("iframe");f.src=` + string(src) +
		`;f.title="Chat";f.style.cssText="position:fixed;bottom:1rem;right:1rem;width:22rem;height:32rem;border:0;border-radius:1rem;box-shadow:0 4px 24px rgba(0,0,0,.2);z-index:2147483647";document.body.appendChild(f);})();`
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", []byte(js))
}
