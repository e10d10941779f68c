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

// providerOption is one choice of the connect form's provider list.
type providerOption struct{ Value, Label string }

// providers are the channel types in the order the form offers them, SMS first: it is
// the one carried end to end.
var providers = []providerOption{
	{string(blueprint.ChannelSMS), "SMS"},
	{string(blueprint.ChannelWebchat), "Web chat"},
	{string(blueprint.ChannelTelcoVoice), "Phone calls (telco_voice)"},
	{string(blueprint.ChannelMsgApp1), "Messaging app 1 (msgapp_1), not carried yet"},
	{string(blueprint.ChannelMsgApp2), "Messaging app 2 (msgapp_2), not carried yet"},
	{string(blueprint.ChannelMsgApp3), "Messaging app 3 (msgapp_3), not carried yet"},
	{string(blueprint.ChannelMsgApp4), "Messaging app 4 (msgapp_4), not carried yet"},
}

// providerName is how the page names a provider.
func providerName(p string) string {
	switch blueprint.ChannelType(p) {
	case blueprint.ChannelSMS:
		return "SMS"
	case blueprint.ChannelWebchat:
		return "Web chat"
	case blueprint.ChannelTelcoVoice:
		return "Phone calls"
	}
	if n, ok := strings.CutPrefix(p, "msgapp_"); ok {
		return "Messaging app " + n
	}
	return p
}

// channelRow is a channel as the page shows it.
type channelRow struct {
	channels.View
	ProviderName string
	AgentName    string // the agent holding the inbound seat; empty when none, or not found
}

// connectForm is what the connect form was given, and the error it got, by field.
type connectForm struct {
	Provider, Name, PhoneNumber, Region, HelpText string
	Field                                         string // the field the error is about: provider, name, phone_number, region, help_text; empty for the form
	Error                                         string
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
		row := channelRow{View: c, ProviderName: providerName(c.Provider)}
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
	// SMS and voice channels are numbers; the other providers' settings are not on this form.
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
		f.Field, f.Error = formField(e), e.Message
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
func formField(e *apierr.Error) string {
	if e.Code == "number_taken" {
		return "phone_number"
	}
	switch p := strings.TrimPrefix(e.Param, "config."); p {
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
