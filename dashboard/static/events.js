// The Events page's live view: follows the workspace's event feed (server-sent events) and
// puts each new event at the top of the table. Text only, never HTML.
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
  function cell(row, text, code) {
    var td = document.createElement("td");
    if (code) {
      var c = document.createElement("code");
      c.textContent = text;
      if (code === "data") { c.className = "data"; }
      td.appendChild(c);
    } else {
      td.textContent = text;
    }
    row.appendChild(td);
  }
  var source = new EventSource("/dashboard/events/stream?after=" + encodeURIComponent(status.getAttribute("data-after") || "0"));
  source.onopen = function () { status.textContent = "Live: new events appear at the top."; };
  source.onerror = function () { status.textContent = "Reconnecting…"; };
  function add(ev) {
    var env;
    try { env = JSON.parse(ev.data); } catch (e) { return; }
    var none = document.getElementById("events-none");
    if (none) { none.remove(); }
    var row = document.createElement("tr");
    row.className = "fresh";
    cell(row, when(env.created_at));
    cell(row, env.type || "");
    cell(row, env.id || "", true);
    cell(row, env.data === undefined ? "" : JSON.stringify(env.data), "data");
    body.insertBefore(row, body.firstChild);
    shown++;
    while (body.rows.length > limit) { body.deleteRow(body.rows.length - 1); }
    status.textContent = "Live: " + shown + " new event" + (shown === 1 ? "" : "s") + " since the page opened.";
  }
  source.onmessage = add; // every frame is `event: message`; the envelope names its type
}());
