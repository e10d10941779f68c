package dashboard

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/channels"
	"switchboard/manage"
	"switchboard/store"
)

// The Channels page: the workspace's channels with their status, the agent answering what
// comes in, the inbound URL to paste at the provider (a Copy button, static/channels.js),
// and, for an owner or admin (the channels permission), a form to connect one and a
// confirmed delete. Everyone signed in reads it; the handlers that change anything ask the
// permission table again.

// channelsCSP is the dashboard's policy plus this site's scripts (static/channels.js).
const channelsCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// providerOption is one choice of the connect form's provider list: a messaging app has its
// own settings (Fields), a setup note, and where its inbound URL goes (Paste).
type providerOption struct {
	Value, Label string
	Name         string // how the page names a channel of it
	Address      string // what a channel's address is (its number, the app's account id)
	Fields       []appField
	Note         string
	Paste        string
}

// appField is one setting of a messaging app's connect form. A Secret is a password input,
// never filled back in: the API seals it and shows only a hint of its end.
type appField struct {
	Key, Label, Hint string
	Secret           bool
}

// metaFields are the settings of Meta's apps after the account id.
func metaFields(accountKey, accountLabel, accountHint, tokenHint string) []appField {
	return []appField{
		{Key: accountKey, Label: accountLabel, Hint: accountHint},
		{Key: "access_token", Label: "Access token", Hint: tokenHint, Secret: true},
		{Key: "app_secret", Label: "App secret", Hint: "App settings → Basic → App secret: it checks the signature of every webhook.", Secret: true},
		{Key: "verify_token", Label: "Verify token", Hint: "Any string you choose; type the same in the app's webhook settings.", Secret: true},
	}
}

// providers are the channel types in the order the form offers them, SMS first.
var providers = []providerOption{
	{Value: string(blueprint.ChannelSMS), Label: "SMS", Name: "SMS"},
	{Value: string(blueprint.ChannelWebchat), Label: "Web chat", Name: "Web chat"},
	{Value: string(blueprint.ChannelTelcoVoice), Label: "Phone calls (telco_voice)", Name: "Phone calls"},
	{Value: string(blueprint.ChannelMsgApp1), Label: "WhatsApp (msgapp_1)", Name: "WhatsApp", Address: "Phone number ID",
		Fields: metaFields("phone_number_id", "Phone number ID", "Meta app dashboard → WhatsApp → API Setup → Phone number ID (digits).",
			"A system user's permanent token with whatsapp_business_messaging."),
		Note:  "WhatsApp Business Cloud API, through a Meta app with the WhatsApp product.",
		Paste: "In your Meta app: WhatsApp → Configuration → Webhook. Paste this as the Callback URL with your verify token, then subscribe to the messages field."},
	{Value: string(blueprint.ChannelMsgApp2), Label: "Messenger (msgapp_2)", Name: "Messenger", Address: "Page ID",
		Fields: metaFields("page_id", "Page ID", "The Facebook Page's numeric id.", "The Page access token, with pages_messaging."),
		Note:   "Facebook Messenger, as a Facebook Page connected to a Meta app with the Messenger product.",
		Paste:  "In your Meta app: Messenger → Settings → Webhooks. Paste this as the Callback URL with your verify token, and subscribe the Page to messages."},
	{Value: string(blueprint.ChannelMsgApp3), Label: "Instagram (msgapp_3)", Name: "Instagram", Address: "Instagram account ID",
		Fields: metaFields("instagram_account_id", "Instagram account ID", "The professional account's numeric id.",
			"The account's token (Instagram API with Instagram login), with instagram_business_manage_messages."),
		Note:  "Instagram Messaging, as a professional account added to a Meta app with the Instagram product.",
		Paste: "In your Meta app: Instagram → Webhooks. Paste this as the Callback URL with your verify token, and subscribe to messages."},
	{Value: string(blueprint.ChannelMsgApp4), Label: "Telegram (msgapp_4)", Name: "Telegram", Address: "Bot ID",
		Fields: []appField{{Key: "bot_token", Label: "Bot token", Hint: "The token @BotFather gave for /newbot, such as 123456789:AAE…", Secret: true}},
		Note:   "A Telegram bot (Bot API). This server registers its webhook with Telegram: nothing to paste.",
		Paste:  "Registered with Telegram as the bot's webhook (with a secret token) when the channel is connected and on every check: nothing to paste. This server's public URL must be HTTPS that Telegram can reach."},
}

// providerOf is the form's option for a channel type (nil when it has none).
func providerOf(p string) *providerOption {
	for i := range providers {
		if providers[i].Value == p {
			return &providers[i]
		}
	}
	return nil
}

// providerName is how the page names a provider.
func providerName(p string) string {
	if o := providerOf(p); o != nil {
		return o.Name
	}
	return p
}

// setting is one of a channel's settings as the page shows it: a credential only as the
// hint the API gives (its last characters), never in full.
type setting struct {
	Label, Value string
	Secret       bool
}

// settingsOf are a messaging app channel's settings, in the form's order.
func settingsOf(c channels.View) []setting {
	o := providerOf(c.Provider)
	if o == nil || len(o.Fields) == 0 {
		return nil
	}
	var cfg map[string]any
	_ = json.Unmarshal(c.Config, &cfg)
	var out []setting
	for _, f := range o.Fields {
		if !f.Secret {
			continue // the account id: the channel's address, shown as such
		}
		if v, ok := cfg[f.Key].(string); ok && v != "" {
			out = append(out, setting{Label: f.Label, Value: v, Secret: f.Secret})
		}
	}
	if u, ok := cfg["bot_username"].(string); ok && u != "" {
		out = append(out, setting{Label: "Bot", Value: "@" + u})
	}
	return out
}

// channelRow is a channel as the page shows it.
type channelRow struct {
	channels.View
	ProviderName string
	AgentName    string    // the agent holding the inbound seat; empty when none, or not found
	Settings     []setting // a messaging app's settings, credentials as hints
	Paste        string    // where its inbound URL goes, for a messaging app
	AddressLabel string    // what its address is
}

// connectForm is what the connect form was given, and the error it got, by field.
type connectForm struct {
	Provider, Name, PhoneNumber, Region, HelpText string
	// App are the messaging app settings typed, by "provider.key"; credentials are never
	// kept (the form asks for them again).
	App   map[string]string
	Field string // the field the error is about: provider, name, phone_number, region, help_text, or "msgapp_N.key"; empty for the form
	Error string
}

type channelsData struct {
	Channels  []channelRow
	Providers []providerOption
	Form      connectForm
	MaxHelp   int
}

func (h *dash) channelsPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	h.renderChannels(w, r, p, http.StatusOK, connectForm{Provider: string(blueprint.ChannelSMS)})
}

func (h *dash) renderChannels(w http.ResponseWriter, r *http.Request, p store.Principal, status int, f connectForm) {
	ctx := r.Context()
	list, err := h.Channels.List(ctx, p.WorkspaceID, "")
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	agents, err := h.Ops.ListAgents(ctx, p.WorkspaceID, manage.ListAgentsInput{})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	names := make(map[string]string, len(agents.Agents))
	for _, a := range agents.Agents {
		names[a.ID] = a.Name
	}
	d := channelsData{Providers: providers, Form: f, MaxHelp: 320}
	for _, c := range list {
		row := channelRow{View: c, ProviderName: providerName(c.Provider), Settings: settingsOf(c)}
		if o := providerOf(c.Provider); o != nil {
			row.Paste, row.AddressLabel = o.Paste, o.Address
		}
		if row.AddressLabel == "" {
			row.AddressLabel = "Number"
		}
		if c.InboundAgentID != nil {
			row.AgentName = names[c.InboundAgentID.String()]
		}
		d.Channels = append(d.Channels, row)
	}
	w.Header().Set("Content-Security-Policy", channelsCSP)
	h.render(w, r, status, "channels", view{Title: "Channels", Nav: "channels", P: p, Data: d})
}

// connectChannel connects a channel from the form. A refusal is shown beside the field it
// is about, with what was typed kept.
func (h *dash) connectChannel(w http.ResponseWriter, r *http.Request, p store.Principal) {
	f := connectForm{Provider: r.PostFormValue("provider"), Name: r.PostFormValue("name"),
		PhoneNumber: strings.TrimSpace(r.PostFormValue("phone_number")), Region: strings.TrimSpace(r.PostFormValue("region")),
		HelpText: r.PostFormValue("help_text")}
	in := channels.Input{Provider: blueprint.ChannelType(f.Provider), Name: &f.Name}
	if o := providerOf(f.Provider); o != nil && len(o.Fields) > 0 {
		// A messaging app's settings, each named for its provider on the form (all the apps'
		// fieldsets post without the page's script); a credential is never filled back in.
		in.Config, f.App = map[string]json.RawMessage{}, map[string]string{}
		for _, fl := range o.Fields {
			v := strings.TrimSpace(r.PostFormValue(o.Value + "." + fl.Key))
			if v != "" {
				in.Config[fl.Key] = jsonString(v)
			}
			if !fl.Secret {
				f.App[o.Value+"."+fl.Key] = v
			}
		}
	}
	// SMS and voice channels are numbers.
	if in.Provider == blueprint.ChannelSMS || in.Provider == blueprint.ChannelTelcoVoice {
		in.Config = map[string]json.RawMessage{"phone_number": jsonString(f.PhoneNumber)}
		if f.Region != "" {
			in.Config["region"] = jsonString(f.Region)
		}
		if in.Provider == blueprint.ChannelSMS && strings.TrimSpace(f.HelpText) != "" {
			in.Config["help_text"] = jsonString(f.HelpText)
		}
	}
	c, err := h.Channels.Create(r.Context(), p.WorkspaceID, in)
	if e := apierr.As(err); e != nil {
		f.Field, f.Error = formField(f.Provider, e), e.Message
		h.renderChannels(w, r, p, e.Status(), f)
		return
	}
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/channels", "The channel "+c.Name+" is connected"+statusWords(c))
}

// formField is the connect form's field an error is about.
func formField(provider string, e *apierr.Error) string {
	p := strings.TrimPrefix(e.Param, "config.")
	if o := providerOf(provider); o != nil && len(o.Fields) > 0 {
		for _, f := range o.Fields {
			if f.Key == p {
				return o.Value + "." + p
			}
		}
		if e.Code == "number_taken" {
			return o.Value + "." + o.Fields[0].Key // the account is the channel's address
		}
	}
	if e.Code == "number_taken" {
		return "phone_number"
	}
	switch p {
	case "provider", "name", "phone_number", "region", "help_text":
		return p
	}
	return ""
}

// statusWords ends a flash about a channel with its status.
func statusWords(c channels.View) string {
	if c.Status == store.ChannelConnected {
		return "."
	}
	return ", but needs setup: " + deref(c.Setup)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// channelOf reads the channel the path names.
func (h *dash) channelOf(r *http.Request, p store.Principal) (channels.View, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return channels.View{}, &store.NotFoundError{What: "channel"}
	}
	return h.Channels.Get(r.Context(), p.WorkspaceID, id)
}

// checkChannel decides a channel's status again, as PATCH /api/channels/{id} does: after
// the number was added to the carrier account, say.
func (h *dash) checkChannel(w http.ResponseWriter, r *http.Request, p store.Principal) {
	c, err := h.channelOf(r, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	c, err = h.Channels.Update(r.Context(), p.WorkspaceID, c.ID, channels.Input{})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	if c.Status == store.ChannelConnected {
		h.flash(w, r, Prefix+"/channels", "The channel "+c.Name+" is connected.")
		return
	}
	h.flash(w, r, Prefix+"/channels", "The channel "+c.Name+" still needs setup: "+deref(c.Setup))
}

type deleteChannelData struct {
	Channel   channels.View
	Provider  string
	AgentName string
}

// confirmDeleteChannel is the confirmation step before a delete: what goes with it.
func (h *dash) confirmDeleteChannel(w http.ResponseWriter, r *http.Request, p store.Principal) {
	c, err := h.channelOf(r, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	d := deleteChannelData{Channel: c, Provider: providerName(c.Provider)}
	if c.InboundAgentID != nil {
		if a, err := h.Ops.GetAgent(r.Context(), p.WorkspaceID, manage.GetAgentInput{AgentID: c.InboundAgentID.String()}); err == nil {
			d.AgentName = a.Agent.Name
		}
	}
	h.render(w, r, http.StatusOK, "channel-delete", view{Title: "Delete " + c.Name, Nav: "channels", P: p, Data: d})
}

func (h *dash) deleteChannel(w http.ResponseWriter, r *http.Request, p store.Principal) {
	c, err := h.channelOf(r, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	if _, err := h.Channels.Delete(r.Context(), p.WorkspaceID, c.ID); err != nil {
		h.fail(w, r, p, err)
		return
	}
	h.flash(w, r, Prefix+"/channels", "The channel "+c.Name+" is deleted, with its deployments.")
}
