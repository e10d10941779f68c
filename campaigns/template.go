package campaigns

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/store"
)

// Campaigns on WhatsApp (msgapp_1). WhatsApp delivers a business's free-form message only
// within 24 hours of the person's last message (the customer-service window); anyone else is
// reached with a template the business had approved in WhatsApp Manager. A campaign on a
// msgapp_1 deployment names that template; each contact gets:
//
//   - the template, when they have not written to the channel's number within the window
//     (the usual case for a campaign);
//   - first_message as a free-form text, when they have: WhatsApp takes it, Meta does not
//     charge a template for it, and it reads as the conversation going on.
//
// Either way the transcript records first_message as the agent's opening (write it as the
// template reads, so the agent knows what it said), and the contact's reply reaches the
// campaign's agent on the channel.

// Template is the approved WhatsApp template a campaign sends outside the window.
type Template struct {
	// Name is the template's name in WhatsApp Manager (lowercase letters, digits, _).
	Name string `json:"name"`
	// Language is the code of the approved translation, such as en_US or de.
	Language string `json:"language"`
	// Parameters fill the template body's {{1}}, {{2}}… in order. Each may name the
	// contact's fields: {{contact.name}}, {{contact.first_name}}, {{contact.phone}}, with a
	// fallback after a bar for a contact without one ({{contact.first_name|there}}).
	Parameters []string `json:"parameters"`
}

// Limits of a template.
const (
	MaxTemplateParameters   = 20
	MaxTemplateParameterLen = 1024
)

var (
	templateName     = regexp.MustCompile(`^[a-z0-9_]{1,512}$`)
	templateLanguage = regexp.MustCompile(`^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$`)
	// contactVariable is a {{contact.FIELD}} or {{contact.FIELD|fallback}} in a parameter.
	contactVariable = regexp.MustCompile(`\{\{\s*contact\.([a-z_]+)\s*(?:\|([^}]*))?\}\}`)
)

// contactFields are the fields a parameter may name.
var contactFields = map[string]bool{"name": true, "first_name": true, "phone": true}

// check validates a template, naming the field at fault.
func (t *Template) check() error {
	t.Name, t.Language = strings.TrimSpace(t.Name), strings.TrimSpace(t.Language)
	if !templateName.MatchString(t.Name) {
		return apierr.Invalid("template.name", "invalid_value", "template.name must be the template's name as WhatsApp Manager shows it: lowercase letters, digits and underscores.")
	}
	if !templateLanguage.MatchString(t.Language) {
		return apierr.Invalid("template.language", "invalid_value", "template.language must be the code of the template's approved language, such as en_US or de.")
	}
	if len(t.Parameters) > MaxTemplateParameters {
		return apierr.Invalid("template.parameters", "invalid_value", "A template takes at most %d parameters.", MaxTemplateParameters)
	}
	for i, p := range t.Parameters {
		param := fmt.Sprintf("template.parameters[%d]", i)
		if strings.TrimSpace(p) == "" || len([]rune(p)) > MaxTemplateParameterLen {
			return apierr.Invalid(param, "invalid_value", "%s must be 1 to %d characters (WhatsApp refuses an empty parameter).", param, MaxTemplateParameterLen)
		}
		for _, m := range contactVariable.FindAllStringSubmatch(p, -1) {
			if !contactFields[m[1]] {
				return apierr.Invalid(param, "invalid_value", "%s names contact.%s; a parameter may name contact.name, contact.first_name or contact.phone.", param, m[1])
			}
		}
	}
	if t.Parameters == nil {
		t.Parameters = []string{}
	}
	return nil
}

// Render is the template's parameters filled in for a contact; ok is false when one comes
// out empty (a variable the contact has no value for, and no fallback): WhatsApp would
// refuse the message, so the contact is skipped (reason template_variable_missing).
func (t Template) Render(name, phone string) (params []string, ok bool) {
	first, _, _ := strings.Cut(strings.TrimSpace(name), " ")
	values := map[string]string{"name": strings.TrimSpace(name), "first_name": first, "phone": phone}
	params = make([]string, 0, len(t.Parameters))
	for _, p := range t.Parameters {
		out := contactVariable.ReplaceAllStringFunc(p, func(v string) string {
			m := contactVariable.FindStringSubmatch(v)
			if values[m[1]] != "" {
				return values[m[1]]
			}
			return strings.TrimSpace(m[2])
		})
		if strings.TrimSpace(out) == "" {
			return nil, false
		}
		params = append(params, out)
	}
	return params, true
}

// AppMessage is a campaign's opening to one contact on a messaging app channel.
type AppMessage struct {
	// To is the person's id at the app (on WhatsApp, their number without the +).
	To string
	// Text is first_message, sent when the app takes a free-form message.
	Text string
	// Template, with Parameters filled in for the contact, is sent otherwise.
	Template Template
}

// AppSender sends a campaign's openings on messaging app channels (package msgapps).
type AppSender interface {
	// SendCampaign sends m from the channel: the text within the person's customer-service
	// window, the template outside it. It returns the app's message id and whether the
	// template was sent.
	SendCampaign(ctx context.Context, c store.Channel, m AppMessage) (id string, template bool, err error)
}

// templateApp is the one messaging app campaigns send on: WhatsApp, whose people are
// addressed by phone number (a contact's phone), and which takes approved templates outside
// the window. Messenger and Instagram allow no promotional message outside theirs, and know
// people only by ids the app gave them.
const templateApp = blueprint.ChannelMsgApp1

// checkTemplate holds a campaign's template to its deployment: a WhatsApp deployment needs
// one, another deployment takes none.
func checkTemplate(channelType string, t []byte) error {
	switch {
	case channelType == string(templateApp) && len(t) == 0:
		return apierr.Invalid("template", "missing_parameter",
			"A campaign on a msgapp_1 (WhatsApp) deployment needs template: the approved template ({name, language, parameters}) WhatsApp delivers to people outside their 24-hour window.")
	case channelType != string(templateApp) && len(t) > 0:
		return apierr.Invalid("template", "invalid_value", "template is for campaigns on a msgapp_1 (WhatsApp) deployment; this one is on %s.", channelType)
	}
	return nil
}
