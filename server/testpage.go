package server

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"switchboard/apierr"
)

// testPageTemplate is the page behind an agent's test link. The agent's UUID in the path is
// the capability to see the page: it is unguessable and handed out only to the workspace by
// generate_test_link. The chat is the webchat widget itself (webchat/static/widget.js, the
// script and style sheet visitors get from the embed line), shown inline: what the builder
// tries is what visitors get. Only its transport differs, because the agent need not be
// deployed on webchat yet: it goes through POST /api/agents/{id}/chat like every client,
// streamed, so it needs what that route needs: an API key of the agent's workspace (any
// role), typed into the page and kept in the tab's sessionStorage only, or nothing in
// APP_ENV=development. The page never embeds a key. The bootstrap (display name, greeting,
// language) is the page's, as GET /embed/{id}/config would answer it.
var testPageTemplate = template.Must(template.New("test").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Name}} · Switchboard test</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:1.5rem auto;padding:0 1rem;color:#111827}
.muted{color:#4b5563;font-size:.9rem}details{margin:1rem 0}h1{font-size:1.4rem;margin:.5rem 0}</style></head>
<body><main>
<h1>Test: {{.DisplayName}}</h1><p class="muted">Test page of the agent “{{.Name}}” ({{.Status}}). This is the webchat widget your visitors get.</p>
{{if ne .Status "enabled"}}<p class="muted">This agent is disabled: it does not reply.</p>{{end}}
<div id="chat" data-chat-url="/api/agents/{{.ID}}/chat" data-agent="{{.ID}}" data-display-name="{{.DisplayName}}"
 data-greeting="{{.Greeting}}" data-language="{{.Language}}" data-disclosure="{{.Disclosure}}"></div>
<p id="state" class="muted" aria-live="polite"></p>
<details><summary class="muted">API key</summary>
<p class="muted">Chatting needs an API key of this agent's workspace (any role). It stays in this tab only.
In development (APP_ENV=development) leave it empty.</p>
<label for="key" class="muted">API key</label>
<input id="key" type="password" autocomplete="off" placeholder="sk-svc_..." style="width:100%"></details>
</main>
<script src="/embed/static/widget.js"></script>
<script>
(function () {
  var host = document.getElementById("chat"), keyInput = document.getElementById("key");
  var state = document.getElementById("state");
  keyInput.value = sessionStorage.getItem("sb-key") || "";
  keyInput.addEventListener("change", function () { sessionStorage.setItem("sb-key", keyInput.value.trim()); });
  function describe(a) {
    var parts = ["status: " + a.status];
    if (a.labels && a.labels.length) parts.push("labels: " + a.labels.join(", "));
    if (a.escalation) parts.push("escalation: " + a.escalation.trigger + " → " + a.escalation.action);
    return parts.join(" · ");
  }
  var d = host.dataset, lang = (navigator.language || "en").slice(0, 2).toLowerCase();
  window.SwitchboardWebchat.mount(host.attachShadow({mode: "open"}), null, "", d.agent, lang, {
    inline: true, verbose: true, chatUrl: d.chatUrl, storageKey: "sb-test:" + d.agent,
    config: {display_name: d.displayName, greeting: d.greeting, language: d.language, disclosure: d.disclosure || null, available: true},
    headers: function () { var k = keyInput.value.trim(); return k ? {Authorization: "Bearer " + k} : {}; },
    onDone: function (a) { state.textContent = describe(a); }
  });
})();
</script>
</body></html>`))

type testPageData struct {
	ID, Name, DisplayName, Greeting, Language, Status, Disclosure string
}

// testPage serves /agents/{id}/test; webchat.Service.TestPage finds the agent and its
// bootstrap, as GET /embed/{deploymentId}/config would answer it.
func (s *Server) testPage(c echo.Context) error {
	p, err := s.webchat.TestPage(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	data := testPageData{ID: p.Agent.ID.String(), Name: p.Agent.Name, DisplayName: p.DisplayName,
		Greeting: p.Greeting, Language: p.Language, Status: p.Agent.Status}
	if p.Disclosure != nil {
		data.Disclosure = *p.Disclosure
	}
	c.Response().Header().Set("Content-Type", "text/html; charset=utf-8")
	c.Response().WriteHeader(http.StatusOK)
	return testPageTemplate.Execute(c.Response(), data)
}

// embedScript serves /embed/{deploymentId}.js: the webchat loader of a deployment (a launcher
// button; the widget loads from /embed/static/ when a visitor opens it).
func (s *Server) embedScript(c echo.Context) error {
	id, err := uuid.Parse(strings.TrimSuffix(c.Param("id"), ".js"))
	if err != nil || !strings.HasSuffix(c.Param("id"), ".js") {
		return apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	}
	script, err := s.webchat.Loader(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", script)
}
