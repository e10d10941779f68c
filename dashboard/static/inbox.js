// The Inbox page's live view and keys. It follows the workspace's event feed (server-sent
// events, as the Events page does) and, when a turn completes or a conversation starts,
// fetches this page again and swaps the queue, the conversation and the navigation's count
// in place, keeping what is being typed and where the focus is. Ctrl+Enter (or ⌘+Enter) in
// a text box sends its form; Alt+Shift+R goes to the reply box, Alt+Shift+Q to the queue.
// Without the script the page works the same, by reloading.
(function () {
  "use strict";
  var status = document.getElementById("inbox-live");

  function queueLink() {
    return document.querySelector("#inbox-queue a[aria-current=true]") || document.querySelector("#inbox-queue .inbox-list a");
  }

  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && t && t.tagName === "TEXTAREA" && t.form) {
      e.preventDefault();
      if (t.form.requestSubmit) { t.form.requestSubmit(); } else { t.form.submit(); }
      return;
    }
    if (e.altKey && e.shiftKey && !e.ctrlKey && !e.metaKey) {
      var to = null;
      if (e.code === "KeyR") { to = document.getElementById("reply-text"); }
      if (e.code === "KeyQ") { to = queueLink(); }
      if (to) { e.preventDefault(); to.focus(); }
    }
  });

  if (!status || !window.EventSource || !window.fetch || !window.DOMParser) { return; }
  var regions = ["nav-inbox", "inbox-queue", "conversation"];
  var busy = false, again = false, timer = null;

  function swap(doc) {
    var active = document.activeElement;
    var focusID = active && active.id;
    var start = null, end = null;
    if (active && active.tagName === "TEXTAREA") { start = active.selectionStart; end = active.selectionEnd; }
    var typed = {};
    Array.prototype.forEach.call(document.querySelectorAll("textarea[id]"), function (f) { typed[f.id] = f.value; });
    regions.forEach(function (id) {
      var old = document.getElementById(id), fresh = doc.getElementById(id);
      if (old && fresh) { old.replaceWith(document.importNode(fresh, true)); }
    });
    Object.keys(typed).forEach(function (id) {
      var f = document.getElementById(id);
      if (f && f.tagName === "TEXTAREA" && typed[id] !== "") { f.value = typed[id]; }
    });
    if (focusID && document.activeElement !== document.getElementById(focusID)) {
      var el = document.getElementById(focusID);
      if (el) {
        el.focus();
        if (start !== null && el.setSelectionRange) { el.setSelectionRange(start, end); }
      }
    }
    var waiting = doc.querySelector("#nav-inbox .count");
    var n = waiting ? waiting.textContent : "0";
    status.textContent = "Updated at " + new Date().toTimeString().slice(0, 5) + ": " + n + " waiting.";
    status.setAttribute("data-updated", String(Date.now()));
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.text(); })
      .then(function (html) { swap(new DOMParser().parseFromString(html, "text/html")); })
      .catch(function () { status.textContent = "Could not update; reload the page."; })
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  var source = new EventSource("/dashboard/events/stream?after=" + encodeURIComponent(status.getAttribute("data-after") || "0"));
  source.onopen = function () {
    status.setAttribute("data-live", "");
    status.textContent = "Live: the queue and the conversation update by themselves.";
  };
  source.onerror = function () { status.removeAttribute("data-live"); status.textContent = "Reconnecting…"; };
  source.onmessage = function (ev) { // every frame is `event: message`; the envelope names its type
    var env;
    try { env = JSON.parse(ev.data); } catch (e) { return; }
    if (env.type !== "turn.completed" && env.type !== "conversation.created") { return; }
    clearTimeout(timer);
    timer = setTimeout(refresh, 150);
  };
}());
