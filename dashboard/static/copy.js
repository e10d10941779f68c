// Copy buttons for text shown on a page (the agent page's embed snippets): the clipboard, or
// else the text selected for the person to copy. The page works without it: the snippet is
// plain selectable text, and the buttons stay hidden.
(function () {
  "use strict";
  function copier(button) {
    var id = button.getAttribute("data-copy-text");
    var block = document.getElementById(id);
    var status = document.getElementById(id + "-status");
    if (!block) { return; }
    function say(text) { if (status) { status.textContent = text; } }
    function selectIt() {
      var range = document.createRange();
      range.selectNodeContents(block);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      var copied = false;
      try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
      say(copied ? "Copied." : "Selected: press Ctrl+C (or ⌘C) to copy.");
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = block.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { say("Copied."); }, selectIt);
      } else {
        selectIt();
      }
    });
  }
  var buttons = document.querySelectorAll("button[data-copy-text]");
  for (var i = 0; i < buttons.length; i++) { copier(buttons[i]); }
}());
