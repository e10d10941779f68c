/* Switchboard webchat widget: loaded by the loader on first open. Plain JS, no framework. */
(function () {
  "use strict";
  var T = {
    en: { title: "Chat", close: "Close chat", label: "Your message", placeholder: "Type a message", send: "Send",
      wait: "Too many messages: please wait a moment ({s} s) and try again.", unavailable: "This chat is unavailable right now.",
      failed: "The message could not be sent. Please try again.", typing: "Replying…", you: "You", human: "Your message was passed on to a person from our team.",
      paused: "This chat is paused right now. Please try again later.", blocked: "This chat is not available to you." },
    de: { title: "Chat", close: "Chat schließen", label: "Ihre Nachricht", placeholder: "Nachricht eingeben", send: "Senden",
      wait: "Zu viele Nachrichten: Bitte warten Sie einen Moment ({s} s) und versuchen Sie es erneut.", unavailable: "Dieser Chat ist derzeit nicht verfügbar.",
      failed: "Die Nachricht konnte nicht gesendet werden. Bitte versuchen Sie es erneut.", typing: "Antwort wird geschrieben…", you: "Sie", human: "Ihre Nachricht wurde an eine Person aus unserem Team weitergegeben.",
      paused: "Dieser Chat ist gerade pausiert. Bitte versuchen Sie es später erneut.", blocked: "Dieser Chat steht Ihnen nicht zur Verfügung." },
    fr: { title: "Chat", close: "Fermer le chat", label: "Votre message", placeholder: "Écrivez un message", send: "Envoyer",
      wait: "Trop de messages : veuillez patienter un instant ({s} s) puis réessayer.", unavailable: "Ce chat n'est pas disponible pour le moment.",
      failed: "Le message n'a pas pu être envoyé. Veuillez réessayer.", typing: "Réponse en cours…", you: "Vous", human: "Votre message a été transmis à une personne de notre équipe.",
      paused: "Ce chat est en pause pour le moment. Veuillez réessayer plus tard.", blocked: "Ce chat ne vous est pas accessible." },
    es: { title: "Chat", close: "Cerrar el chat", label: "Su mensaje", placeholder: "Escriba un mensaje", send: "Enviar",
      wait: "Demasiados mensajes: espere un momento ({s} s) y vuelva a intentarlo.", unavailable: "Este chat no está disponible en este momento.",
      failed: "No se pudo enviar el mensaje. Inténtelo de nuevo.", typing: "Respondiendo…", you: "Usted", human: "Su mensaje se ha transmitido a una persona de nuestro equipo.",
      paused: "Este chat está en pausa en este momento. Inténtelo más tarde.", blocked: "Este chat no está disponible para usted." }
  };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function load(key) {
    try { return JSON.parse(localStorage.getItem(key) || "null"); } catch (e) { return null; }
  }
  function save(key, v) {
    try { localStorage.setItem(key, JSON.stringify(v)); } catch (e) { /* storage blocked: the conversation lasts the page */ }
  }
  // mount builds the widget in root (a shadow root). The embed loader passes its launcher
  // button; the agent's test page passes none and opts: inline (the panel is the page, no
  // launcher, no close), config (the bootstrap, not fetched), chatUrl and headers (the
  // /api/agents/{id}/chat route with the builder's key), storageKey, verbose (the server's
  // error messages, for the builder) and onDone (each completed reply).
  function mount(root, launcher, base, dep, lang, opts) {
    opts = opts || {};
    if (root.__sbw) { root.__sbw.toggle(); return; }
    var t = T[lang] || T.en;
    var key = opts.storageKey || "sb-webchat:" + dep;
    var state = load(key) || { token: "", messages: [] };
    var css = el("link");
    css.rel = "stylesheet";
    css.href = base + "/embed/static/widget.css";
    root.appendChild(css);

    var panel = el("section", "sbw-panel" + (opts.inline ? " sbw-inline" : ""));
    panel.setAttribute("role", "dialog");
    panel.setAttribute("aria-modal", "false");
    panel.id = "sbw-panel";
    panel.hidden = true;
    var head = el("div", "sbw-head");
    var title = el("h2", null, t.title);
    title.id = "sbw-title";
    panel.setAttribute("aria-labelledby", "sbw-title");
    var close = el("button", "sbw-close", "\u00D7");
    close.type = "button";
    close.setAttribute("aria-label", t.close);
    head.appendChild(title);
    if (!opts.inline) head.appendChild(close);
    // The AI disclosure is the first line of the log, not a strip above it: it scrolls with
    // the conversation and never covers the first message.
    var disclosure = "";
    var log = el("div", "sbw-log");
    log.setAttribute("role", "log");
    log.setAttribute("aria-live", "polite");
    log.setAttribute("aria-label", t.title);
    var status = el("p", "sbw-state");
    status.setAttribute("role", "status");
    var form = el("form", "sbw-form");
    var label = el("label", "sbw-sr", t.label);
    label.htmlFor = "sbw-input";
    var input = el("input");
    input.id = "sbw-input";
    input.name = "message";
    input.autocomplete = "off";
    input.placeholder = t.placeholder;
    input.maxLength = 4000;
    var send = el("button", null, t.send);
    send.type = "submit";
    form.appendChild(label);
    form.appendChild(input);
    form.appendChild(send);
    panel.appendChild(head);
    panel.appendChild(log);
    panel.appendChild(status);
    panel.appendChild(form);
    root.appendChild(panel);
    if (launcher) launcher.setAttribute("aria-controls", "sbw-panel");

    function bubble(role, text, author) {
      if (role === "notice") {
        var line = el("p", "sbw-notice", text);
        log.appendChild(line);
        log.scrollTop = log.scrollHeight;
        return line;
      }
      var li = el("div", "sbw-msg" + (role === "user" ? " sbw-user" : role === "human" ? " sbw-human" : ""));
      // A person's reply shows their name; the visitor's and the agent's are named for screen readers.
      if (role === "human") li.appendChild(el("span", "sbw-author", author));
      else li.appendChild(el("span", "sbw-sr", (role === "user" ? t.you : title.textContent) + ": "));
      var body = el("span", null, text);
      li.appendChild(body);
      log.appendChild(li);
      log.scrollTop = log.scrollHeight;
      return body;
    }
    // stop shows why the chat takes no message (state: unavailable, paused, blocked).
    function stop(state) {
      status.textContent = t[state];
      input.disabled = true;
      send.disabled = true;
      panel.setAttribute("data-state", state);
    }
    function unavailable() { stop("unavailable"); }
    function render(greeting) {
      log.textContent = "";
      if (disclosure) log.appendChild(el("p", "sbw-disclosure", disclosure));
      if (greeting) bubble("assistant", greeting);
      for (var i = 0; i < state.messages.length; i++) bubble(state.messages[i].role, state.messages[i].text, state.messages[i].author);
    }
    function open() {
      panel.hidden = false;
      if (!launcher) { if (!input.disabled && !opts.inline) input.focus(); return; }
      launcher.setAttribute("aria-expanded", "true");
      try { localStorage.setItem("sb-webchat-open:" + dep, "1"); } catch (e) { /* ignore */ }
      if (!input.disabled) input.focus(); else close.focus();
    }
    function shut() {
      if (!launcher) return;
      panel.hidden = true;
      launcher.setAttribute("aria-expanded", "false");
      try { localStorage.removeItem("sb-webchat-open:" + dep); } catch (e) { /* ignore */ }
      launcher.focus();
    }
    close.addEventListener("click", shut);
    panel.addEventListener("keydown", function (e) { if (e.key === "Escape") shut(); });
    root.__sbw = { toggle: function () { if (panel.hidden) open(); else shut(); } };

    render("");
    (opts.config ? Promise.resolve(opts.config) : fetch(base + "/embed/" + dep + "/config", { headers: { Accept: "application/json" } }).then(function (r) {
      if (!r.ok) { unavailable(); return null; }
      return r.json();
    })).then(function (cfg) {
      if (!cfg) return;
      title.textContent = cfg.display_name;
      panel.setAttribute("lang", cfg.language || lang);
      disclosure = cfg.disclosure || "";
      render(cfg.greeting);
      if (cfg.available === false) { stop("paused"); return; }
      panel.setAttribute("data-state", "ready");
    }, unavailable);

    // listen opens the visitor's stream once there is a conversation: the replies of the
    // people who took it over, and lines such as "Ann joined the conversation", arrive
    // without the visitor writing first. The EventSource reconnects by itself, resuming
    // after the last message it got (Last-Event-ID); state.seq does the same across reloads.
    var source = null;
    function listen() {
      if (opts.chatUrl || !state.token || source || typeof EventSource === "undefined") return;
      var url = base + "/embed/" + dep + "/stream?visitor_token=" + encodeURIComponent(state.token) + "&after=" + (state.seq || 0);
      source = new EventSource(url);
      source.addEventListener("message", function (e) {
        var m = JSON.parse(e.data);
        if (m.seq <= (state.seq || 0)) return;
        state.seq = m.seq;
        var role = m.kind === "notice" ? "notice" : "human";
        bubble(role, m.text, m.author);
        state.messages.push({ role: role, text: m.text, author: m.author });
        save(key, state);
        if (role === "human") status.textContent = "";
        panel.setAttribute("data-human", "1");
      });
      source.onerror = function () {
        // A refused stream (the conversation is gone) is closed for good; start over later.
        if (source && source.readyState === 2) source = null;
      };
    }
    function forget() {
      if (source) { source.close(); source = null; }
      state.seq = 0;
    }

    function sendMessage(text, retried) {
      status.textContent = t.typing;
      send.disabled = true;
      panel.setAttribute("data-state", "sending");
      var reply = null, got = "";
      var body = { message: text, stream: true };
      var headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
      if (opts.chatUrl) { if (state.token) body.conversation_id = state.token; } else body.visitor_token = state.token || "";
      var extra = opts.headers ? opts.headers() : {};
      for (var h in extra) headers[h] = extra[h];
      return fetch(opts.chatUrl || base + "/embed/" + dep + "/chat", {
        method: "POST", headers: headers, body: JSON.stringify(body)
      }).then(function (r) {
        if (r.status === 429) {
          status.textContent = t.wait.replace("{s}", r.headers.get("Retry-After") || "60");
          panel.setAttribute("data-state", "wait");
          return null;
        }
        if (!r.ok || !r.body) {
          return r.json().then(function (e) { return (e && e.error) || {}; }, function () { return {}; }).then(function (e) {
            if ((e.code === "visitor_token_invalid" || e.code === "conversation_not_found" || e.code === "conversation_closed") && state.token && !retried) {
              state.token = ""; // a conversation gone or closed by the team: start over
              forget();
              return sendMessage(text, true);
            }
            if (r.status === 403 && e.code !== "role_not_allowed") stop(e.code === "visitor_blocked" ? "blocked" : e.code === "insufficient_quota" ? "paused" : "unavailable");
            else if (r.status === 404 || r.status === 409) unavailable();
            else { status.textContent = (opts.verbose && e.message) || t.failed; panel.setAttribute("data-state", "error"); }
            if (opts.verbose && e.message) status.textContent = e.message;
          });
        }
        var reader = r.body.getReader(), dec = new TextDecoder(), buf = "";
        function frame(chunk) {
          var ev = "message", data = "";
          chunk.split("\n").forEach(function (line) {
            if (line.indexOf("event: ") === 0) ev = line.slice(7);
            else if (line.indexOf("data: ") === 0) data += line.slice(6);
          });
          var d = data ? JSON.parse(data) : {};
          if (ev === "conversation") { state.token = d.visitor_token || d.conversation_id; save(key, state); listen(); }
          else if (ev === "delta") {
            if (!reply) reply = bubble("assistant", "");
            got += d.text;
            reply.textContent = got;
            log.scrollTop = log.scrollHeight;
          } else if (ev === "done") {
            got = d.reply || "";
            if (got && !reply) reply = bubble("assistant", "");
            if (reply) reply.textContent = got;
            if (d.visitor_token || d.conversation_id) state.token = d.visitor_token || d.conversation_id;
            if (got) state.messages.push({ role: "assistant", text: got });
            save(key, state);
            // No reply: a person from the team has the conversation.
            status.textContent = got ? "" : t.human;
            panel.setAttribute("data-state", "ready");
            if (opts.onDone) opts.onDone(d);
          } else if (ev === "error") {
            status.textContent = (d.error && d.error.message) || t.failed;
            panel.setAttribute("data-state", "error");
          }
        }
        function pump() {
          return reader.read().then(function (res) {
            if (res.done) return;
            buf += dec.decode(res.value, { stream: true });
            var i;
            while ((i = buf.indexOf("\n\n")) >= 0) { frame(buf.slice(0, i)); buf = buf.slice(i + 2); }
            return pump();
          });
        }
        return pump();
      }).catch(function () { status.textContent = t.failed; }).then(function () {
        if (!input.disabled) send.disabled = false;
      });
    }
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var text = input.value.trim();
      if (!text || send.disabled) return;
      input.value = "";
      bubble("user", text);
      state.messages.push({ role: "user", text: text });
      save(key, state);
      sendMessage(text, false);
    });
    listen();
    open();
  }
  window.SwitchboardWebchat = { mount: mount };
})();
