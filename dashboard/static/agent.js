// The agent page's blueprint editor: the gutter's line numbers follow the text as it is
// typed and scrolled, and an error's "Line N" link puts the cursor at the start of that
// line. Without the script the numbers are those of the text as the server sent it.
(function () {
  "use strict";
  var text = document.getElementById("blueprint-yaml");
  var gutter = document.getElementById("blueprint-gutter");
  if (!text || !gutter) { return; }

  function renumber() {
    var n = text.value.split("\n").length;
    if (text.value.slice(-1) === "\n") { n--; }
    n = Math.max(n, 1);
    var spans = gutter.children;
    if (spans.length === n) { return; }
    while (spans.length > n) { gutter.removeChild(gutter.lastChild); }
    for (var i = spans.length + 1; i <= n; i++) {
      var s = document.createElement("span");
      s.textContent = String(i);
      gutter.appendChild(s);
    }
  }

  function goToLine(line) {
    var lines = text.value.split("\n");
    var at = 0;
    for (var i = 0; i < line - 1 && i < lines.length; i++) { at += lines[i].length + 1; }
    text.focus();
    text.setSelectionRange(at, at + (lines[line - 1] || "").length);
    var lineHeight = text.scrollHeight / Math.max(lines.length, 1);
    text.scrollTop = Math.max(0, (line - 3) * lineHeight);
  }

  text.addEventListener("input", renumber);
  text.addEventListener("scroll", function () { gutter.scrollTop = text.scrollTop; });
  document.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[data-line]") : null;
    if (!a) { return; }
    e.preventDefault();
    goToLine(parseInt(a.getAttribute("data-line"), 10));
  });
}());
