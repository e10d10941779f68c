// The Channels page: Copy buttons for the inbound URLs (the clipboard, or else the text
// selected for the person to copy), and each provider's settings shown only when it is chosen.
// The page works without it: the URL fields are selectable and the form posts as it is.
(function () {
  "use strict";
  function copier(button) {
    var field = document.getElementById(button.getAttribute("data-copy"));
    var status = document.getElementById(button.getAttribute("data-copy") + "-status");
    if (!field) { return; }
    function say(text) { if (status) { status.textContent = text; } }
    function selectIt() {
      field.focus();
      field.select();
      var copied = false;
      try { copied = document.execCommand("copy"); } catch (e) { copied = false; }
      say(copied ? "Copied." : "Selected: press Ctrl+C (or ⌘C) to copy.");
    }
    button.hidden = false;
    button.addEventListener("click", function () {
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(field.value).then(function () { say("Copied."); }, selectIt);
      } else {
        selectIt();
      }
    });
    field.addEventListener("focus", function () { field.select(); });
  }
  var buttons = document.querySelectorAll("button[data-copy]");
  for (var i = 0; i < buttons.length; i++) { copier(buttons[i]); }

  var form = document.getElementById("connect-form");
  var sms = document.getElementById("sms-settings");
  if (!form || !sms) { return; }
  var provider = form.elements.provider;
  var number = form.elements.phone_number;
  var apps = form.querySelectorAll("fieldset.app-settings");
  function show() {
    // SMS and voice channels are numbers (help_text is SMS's alone, and ignored for voice).
    var isNumber = provider.value === "sms" || provider.value === "telco_voice";
    sms.hidden = !isNumber;
    sms.disabled = !isNumber; // not sent for another provider
    number.required = isNumber;
    // A messaging app's settings: only the chosen app's, each of them required.
    for (var j = 0; j < apps.length; j++) {
      var mine = apps[j].getAttribute("data-provider") === provider.value;
      apps[j].hidden = !mine;
      apps[j].disabled = !mine;
      var inputs = apps[j].querySelectorAll("input");
      for (var k = 0; k < inputs.length; k++) { inputs[k].required = mine; }
    }
  }
  provider.addEventListener("change", show);
  show();
}());
