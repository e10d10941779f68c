package blueprint

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"switchboard/catalog"
)

// Thresholds above which Warnings speaks up.
const (
	warnTemperature    = 1.5
	warnGreetingLength = 300
)

// Warnings lists valid but questionable settings of a parsed blueprint, each starting with
// its YAML path.
func Warnings(bp *Blueprint) []string {
	var out []string
	warn := func(path, format string, args ...any) {
		out = append(out, path+": "+fmt.Sprintf(format, args...))
	}
	a := &bp.Agent
	if p := a.Persona; p != nil {
		if n := utf8.RuneCountInString(p.Greeting); n > warnGreetingLength {
			warn("agent.persona.greeting", "%d characters; greetings over %d characters are long to read, and longer to hear on a voice channel", n, warnGreetingLength)
		}
	}
	if l := a.LLM; l != nil && l.Temperature != nil && *l.Temperature > warnTemperature {
		warn("agent.llm.temperature", "%g is above %g; replies may become erratic", *l.Temperature, warnTemperature)
	}
	if kb := a.KnowledgeBase; kb != nil {
		for i, s := range kb.Sources {
			if s.Type == SourceWebsiteCrawl && strings.HasPrefix(strings.ToLower(s.URL), "http://") {
				warn(fmt.Sprintf("agent.knowledge_base.sources[%d].url", i), "%s is not https://", s.URL)
			}
		}
	}
	first := map[ChannelType]int{}
	for i, c := range a.Channels {
		if j, dup := first[c.Type]; dup {
			warn(fmt.Sprintf("agent.channels[%d]", i), "channel %s is listed again (first at agent.channels[%d])", c.Type, j)
			continue
		}
		first[c.Type] = i
	}
	if r := a.BusinessRules; r != nil && r.Escalation != nil {
		e := r.Escalation
		enabled := e.Enabled != nil && *e.Enabled
		if enabled && e.Action == ActionEmailNotification && e.NotificationEmail == "" {
			warn("agent.business_rules.escalation.notification_email", "not set, so the email_notification action has no address to write to")
		}
		if _, voice := first[ChannelTelcoVoice]; voice && enabled && e.Action == ActionTransferToHuman && e.TransferNumber == "" {
			warn("agent.business_rules.escalation.transfer_number", "not set, so a transfer_to_human on a phone call has nobody to call: the caller is told someone will call back")
		}
		if !enabled && (e.Trigger != "" || e.Action != "") {
			warn("agent.business_rules.escalation", "trigger and action are set but enabled is false, so nothing escalates")
		}
	}
	return out
}

// ModelWarnings warns when llm.model names a model the platform does not serve (cat, or the
// default catalog when nil). Such a blueprint is valid, since the spec makes llm.model any
// string, but every turn of the agent fails with model_not_found until the model is changed:
// the platform never guesses another model.
func ModelWarnings(bp *Blueprint, cat *catalog.Catalog) []string {
	if cat == nil {
		cat = catalog.Default()
	}
	l := bp.Agent.LLM
	if l == nil || l.Model == "" {
		return nil
	}
	if _, ok := cat.Lookup(l.Model); ok {
		return nil
	}
	served := cat.IDs()
	if validFamily(l.Provider) {
		served = familyModels(cat, l.Provider)
	}
	return []string{fmt.Sprintf("agent.llm.model: %q is not a model this platform serves, so the agent's turns fail with model_not_found until it names one; served %s models: %s",
		l.Model, l.Provider, strings.Join(served, ", "))}
}
