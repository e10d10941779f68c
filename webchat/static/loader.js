/* Switchboard webchat loader: a launcher button; the widget itself loads on first open. */
(function (base, dep) {
  "use strict";
  // Marks for the performance timeline: the widget's first paint is measured from here
  // (bench/cmd/widgetpaint, docs/benchmarks.md).
  var perf = window.performance, mark = function (n) { if (perf && perf.mark) perf.mark("switchboard-webchat:" + n); };
  mark("loader");
  // The widget comes from where this script came from (PUBLIC_BASE_URL is the fallback).
  var me = document.currentScript, src = me && me.src, at = src ? src.lastIndexOf("/embed/") : -1;
  if (at > 0) base = src.slice(0, at);
  if (!document.body) { document.addEventListener("DOMContentLoaded", function () { start(); }); } else { start(); }
  function start() {
    var words = {
      en: "Open chat", de: "Chat öffnen", fr: "Ouvrir le chat", es: "Abrir el chat"
    };
    var lang = (navigator.language || "en").slice(0, 2).toLowerCase();
    var host = document.createElement("div");
    host.setAttribute("data-switchboard-webchat", dep);
    var root = host.attachShadow ? host.attachShadow({ mode: "open" }) : host;
    var b = document.createElement("button");
    b.type = "button";
    b.setAttribute("aria-label", words[lang] || words.en);
    b.setAttribute("aria-expanded", "false");
    b.setAttribute("aria-haspopup", "dialog");
    var ns = "http://www.w3.org/2000/svg", svg = document.createElementNS(ns, "svg"), path = document.createElementNS(ns, "path");
    svg.setAttribute("viewBox", "0 0 24 24"); svg.setAttribute("width", "28"); svg.setAttribute("height", "28");
    svg.setAttribute("aria-hidden", "true"); svg.setAttribute("focusable", "false");
    path.setAttribute("fill", "currentColor");
    path.setAttribute("d", "M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2z");
    svg.appendChild(path); b.appendChild(svg);
    var st = b.style;
    st.position = "fixed"; st.right = "1rem"; st.bottom = "1rem"; st.zIndex = "2147483646";
    st.width = "3.5rem"; st.height = "3.5rem"; st.borderRadius = "50%"; st.border = "0";
    st.background = "#1d4ed8"; st.color = "#fff"; st.display = "flex"; st.alignItems = "center"; st.justifyContent = "center"; st.cursor = "pointer";
    st.boxShadow = "0 4px 16px rgba(0,0,0,.25)";
    root.appendChild(b);
    document.body.appendChild(host);
    mark("launcher");
    var loading = false;
    function open() {
      if (window.SwitchboardWebchat) { window.SwitchboardWebchat.mount(root, b, base, dep, lang); return; }
      if (loading) return;
      loading = true;
      var s = document.createElement("script");
      s.src = base + "/embed/static/widget.js";
      s.async = true;
      s.onload = function () { loading = false; window.SwitchboardWebchat.mount(root, b, base, dep, lang); };
      s.onerror = function () { loading = false; };
      document.head.appendChild(s);
    }
    b.addEventListener("click", open);
    try { if (localStorage.getItem("sb-webchat-open:" + dep) === "1") open(); } catch (e) { /* storage blocked */ }
  }
})(__BASE__, __DEPLOYMENT__);
