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
	"switchboard/webchat"
)

// testPageTemplate is the page behind an agent's test link. The agent's UUID in the path is
// the capability to see the page: it is unguessable and handed out only to the workspace by
// generate_test_link. Chatting goes through POST /api/agents/{id}/chat like every client,
// streamed, so it needs what that route needs: an API key of the agent's workspace (any
// role), typed into the page and kept in the tab's sessionStorage only, or nothing in
// APP_ENV=development. The page never embeds a key.
var testPageTemplate = template.Must(template.New("test").Parse(`<!doctype html>
<html lang="{{.Language}}"><head><meta charset="utf-8"><title>{{.Name}} · Switchboard test</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
.bubble{background:#f1f3f5;border-radius:1rem;padding:.75rem 1rem;margin:1rem 0;white-space:pre-wrap}
.bubble.user{background:#dbeafe;margin-left:4rem}.muted{color:#666;font-size:.9rem}.error{color:#b91c1c}
form{display:flex;gap:.5rem}form input[name=message]{flex:1;padding:.5rem}details{margin:1rem 0}</style></head>
<body><main id="chat" data-chat-url="/api/agents/{{.ID}}/chat">
<h1>{{.DisplayName}}</h1><p class="muted">Test page of the agent “{{.Name}}” ({{.Status}})</p>
<div id="log"><div class="bubble">{{.Greeting}}</div></div>
{{if ne .Status "enabled"}}<p class="muted">This agent is disabled: it does not reply.</p>{{end}}
<form id="send"><input name="message" maxlength="4000" autocomplete="off" placeholder="Type a message" required>
<button type="submit">Send</button></form>
<p id="state" class="muted"></p>
<details><summary class="muted">API key</summary>
<p class="muted">Chatting needs an API key of this agent's workspace (any role). It stays in this tab only.
In development (APP_ENV=development) leave it empty.</p>
<input id="key" type="password" autocomplete="off" placeholder="sk-svc_..." style="width:100%"></details>
</main>
<script>
(function () {
  var main = document.getElementById("chat"), log = document.getElementById("log");
  var form = document.getElementById("send"), keyInput = document.getElementById("key");
  var state = document.getElementById("state");
  var conversation = sessionStorage.getItem("sb-conv:" + main.dataset.chatUrl) || null;
  keyInput.value = sessionStorage.getItem("sb-key") || "";
  keyInput.addEventListener("change", function () { sessionStorage.setItem("sb-key", keyInput.value.trim()); });
  function bubble(text, cls) {
    var d = document.createElement("div");
    d.className = "bubble" + (cls ? " " + cls : "");
    d.textContent = text;
    log.appendChild(d);
    return d;
  }
  function describe(a) {
    var parts = ["status: " + a.status];
    if (a.labels && a.labels.length) parts.push("labels: " + a.labels.join(", "));
    if (a.escalation) parts.push("escalation: " + a.escalation.trigger + " → " + a.escalation.action);
    return parts.join(" · ");
  }
  form.addEventListener("submit", async function (ev) {
    ev.preventDefault();
    var text = form.message.value.trim();
    if (!text) return;
    form.message.value = "";
    bubble(text, "user");
    var reply = bubble("…");
    var headers = {"Content-Type": "application/json", "Accept": "text/event-stream"};
    var key = keyInput.value.trim();
    if (key) headers["Authorization"] = "Bearer " + key;
    var body = {message: text, stream: true};
    if (conversation) body.conversation_id = conversation;
    try {
      var res = await fetch(main.dataset.chatUrl, {method: "POST", headers: headers, body: JSON.stringify(body)});
      if (!(res.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
        var err = await res.json();
        reply.textContent = err.error ? err.error.message : "HTTP " + res.status;
        reply.classList.add("error");
        return;
      }
      var reader = res.body.getReader(), decoder = new TextDecoder(), buf = "", got = "";
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) break;
        buf += decoder.decode(chunk.value, {stream: true});
        var end;
        while ((end = buf.indexOf("\n\n")) >= 0) {
          var frame = buf.slice(0, end), name = "message", data = "";
          buf = buf.slice(end + 2);
          frame.split("\n").forEach(function (line) {
            if (line.indexOf("event: ") === 0) name = line.slice(7);
            if (line.indexOf("data: ") === 0) data += line.slice(6);
          });
          var msg = data ? JSON.parse(data) : {};
          if (name === "conversation") {
            conversation = msg.conversation_id;
            sessionStorage.setItem("sb-conv:" + main.dataset.chatUrl, conversation);
          } else if (name === "delta") {
            got += msg.text;
            reply.textContent = got;
          } else if (name === "done") {
            reply.textContent = msg.reply || "(no reply: a person from the team has this conversation)";
            state.textContent = describe(msg);
          } else if (name === "error") {
            reply.textContent = msg.error.message;
            reply.classList.add("error");
          }
        }
      }
    } catch (e) {
      reply.textContent = "The request failed: " + e.message;
      reply.classList.add("error");
    }
  });
})();
</script>
</body></html>`))

type testPageData struct {
	ID, Name, DisplayName, Greeting, Language, Status string
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
	return testPageTemplate.Execute(c.Response(), testPageData{ID: a.ID.String(), Name: a.Name, DisplayName: bp.Agent.Persona.DisplayName,
		Greeting: bp.Agent.Persona.Greeting, Language: bp.Agent.Language, Status: a.Status})
}

// embedScript serves /embed/{deploymentId}.js: the webchat loader of a webchat deployment
// (a launcher button; the widget loads from /embed/static/ when a visitor opens it).
func (s *Server) embedScript(c echo.Context) error {
	id, err := uuid.Parse(strings.TrimSuffix(c.Param("id"), ".js"))
	if err != nil || !strings.HasSuffix(c.Param("id"), ".js") {
		return apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	}
	if _, _, err := s.store.DeploymentAgent(c.Request().Context(), id); errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("id", "deployment_not_found", "No such deployment.")
	} else if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.Blob(http.StatusOK, "text/javascript; charset=utf-8", webchat.Loader(s.cfg.PublicBaseURL, id))
}
