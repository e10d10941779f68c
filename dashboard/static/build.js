// The Build page's chat with the builder assistant. Each turn goes to POST /api/chat,
// signed in by the session (same origin), as a stream: the reply is shown as it arrives,
// the conversation's id goes into the address (so a reload keeps it), and when the turn is
// done the page is fetched again and the conversation swapped in place: the server renders
// the cards of the agents made and of the actions parked. Approve and Reject send their
// card's `YES <code>` or a refusal as the next turn; starter prompts fill the message box.
(function () {
  "use strict";
  var form = document.getElementById("build-form");
  var chat = document.getElementById("build-chat");
  if (!form || !chat || !window.fetch || !window.TextDecoder || !window.DOMParser) { return; }
  var box = document.getElementById("build-message");
  var status = document.getElementById("build-status");
  var errorBox = document.getElementById("build-error");
  var model = document.getElementById("build-model");
  var busy = false;

  function conversation() { return chat.getAttribute("data-conversation") || ""; }

  function bubble(role, text) {
    var thread = document.getElementById("build-thread");
    var li = document.createElement("li");
    li.className = "bmsg " + role;
    var from = document.createElement("p");
    from.className = "from";
    from.textContent = role === "user" ? "You" : "Builder";
    var body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    li.appendChild(from);
    li.appendChild(body);
    thread.appendChild(li);
    var starters = document.getElementById("build-starters");
    if (starters) { starters.hidden = true; }
    return body;
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = false;
  }

  // handle reads one server-sent event of the turn.
  function handle(frame, live) {
    var name = "message", data = "";
    frame.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) { name = line.slice(6).trim(); }
      if (line.indexOf("data:") === 0) { data += line.slice(5).trim(); }
    });
    var body;
    try { body = JSON.parse(data); } catch (e) { return; }
    if (name === "conversation") {
      chat.setAttribute("data-conversation", body.conversation_id);
      history.replaceState(null, "", "/dashboard/build?c=" + encodeURIComponent(body.conversation_id));
    } else if (name === "delta") {
      live.textContent += body.text;
    } else if (name === "error") {
      throw new Error(body.error && body.error.message ? body.error.message : "The turn failed.");
    }
  }

  function read(reader, live) {
    var decoder = new TextDecoder(), buffer = "";
    function pump() {
      return reader.read().then(function (res) {
        if (res.done) { return; }
        buffer += decoder.decode(res.value, { stream: true });
        var end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          handle(buffer.slice(0, end), live);
          buffer = buffer.slice(end + 2);
        }
        return pump();
      });
    }
    return pump();
  }

  // refresh swaps the conversation and the list for the server's rendering of them.
  function refresh() {
    return fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        ["build-chat-body", "build-list"].forEach(function (id) {
          var old = document.getElementById(id), fresh = doc.getElementById(id);
          if (old && fresh) { old.replaceWith(document.importNode(fresh, true)); }
        });
      });
  }

  function turn(text) {
    if (busy || !text) { return; }
    busy = true;
    errorBox.hidden = true;
    form.setAttribute("aria-busy", "true");
    chat.removeAttribute("data-idle");
    status.textContent = "The builder is answering…";
    bubble("user", text);
    var live = bubble("assistant", "");
    var body = { message: text, stream: true };
    if (conversation()) { body.conversation_id = conversation(); }
    if (model && model.value) { body.model = model.value; }
    fetch("/api/chat", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "text/event-stream" },
      body: JSON.stringify(body)
    }).then(function (r) {
      if (!r.ok) {
        return r.json().then(function (j) {
          throw new Error(j.error && j.error.message ? j.error.message : "The server answered " + r.status + ".");
        });
      }
      return read(r.body.getReader(), live);
    }).then(function () {
      status.textContent = "Answered.";
      return refresh();
    }).catch(function (err) {
      live.parentNode.remove();
      showError(err.message);
      status.textContent = "";
    }).then(function () {
      busy = false;
      form.removeAttribute("aria-busy");
      chat.setAttribute("data-idle", "");
    });
  }

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var text = box.value.trim();
    if (!text) { return; }
    box.value = "";
    turn(text);
  });
  box.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      if (form.requestSubmit) { form.requestSubmit(); } else { form.dispatchEvent(new Event("submit")); }
    }
  });
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("[data-send], [data-prompt]") : null;
    if (!b) { return; }
    if (b.hasAttribute("data-prompt")) {
      box.value = b.getAttribute("data-prompt");
      box.focus();
      return;
    }
    turn(b.getAttribute("data-send"));
  });
  chat.setAttribute("data-idle", "");
}());
