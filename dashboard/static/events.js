// The Events page's live view: follows the workspace's event feed (server-sent events) and
// puts each new event at the top of the list. Text only, never HTML.
(function () {
  "use strict";
  var status = document.getElementById("events-live");
  var body = document.getElementById("events-body");
  if (!status || !body || !window.EventSource) { return; }
  var shown = 0;
  var limit = 200;
  function when(iso) {
    var d = new Date(iso);
    if (isNaN(d)) { return ""; }
    return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  var source = new EventSource("/dashboard/events/stream?after=" + encodeURIComponent(status.getAttribute("data-after") || "0"));
  source.onopen = function () {
    status.setAttribute("data-live", "");
    if (!shown) { status.textContent = "Live: new events appear at the top."; }
  };
  source.onerror = function () { status.removeAttribute("data-live"); status.textContent = "Reconnecting…"; };
  function add(ev) {
    var env;
    try { env = JSON.parse(ev.data); } catch (e) { return; }
    var none = document.getElementById("events-none");
    if (none) { none.remove(); }
    var row = el("li", "fresh");
    var head = el("p", "event-head");
    head.appendChild(el("strong", "", env.type || ""));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("code", "", env.id || ""));
    head.appendChild(document.createTextNode(" "));
    head.appendChild(el("span", "muted", when(env.created_at)));
    row.appendChild(head);
    row.appendChild(el("code", "data", env.data === undefined ? "" : JSON.stringify(env.data)));
    body.insertBefore(row, body.firstChild);
    shown++;
    while (body.children.length > limit) { body.removeChild(body.lastChild); }
    status.textContent = "Live: " + shown + " new event" + (shown === 1 ? "" : "s") + " since the page opened.";
  }
  source.onmessage = add; // every frame is `event: message`; the envelope names its type
}());
