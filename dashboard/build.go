package dashboard

import (
	"net/http"
	"slices"
	"time"

	"switchboard/access"
	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/store"
)

// The Build page: a person talks to the builder assistant, the one behind POST /api/chat,
// to create, change and deploy agents. The page is rendered here from the stored
// conversation (its messages, the parked actions its replies announced, the agents its tools
// created or changed); a script of this site (static/build.js) sends each turn to POST
// /api/chat signed in by the session (so the turn runs with the person's role), shows the
// reply as it streams, then fetches this page again and swaps the conversation in place.
// Approve and Reject are turns too: `YES <code>`, or a refusal, sent as the next message, so
// the confirming person's role is checked by the pipeline exactly as on /api and /v1.

// buildCSP is the dashboard's policy plus this site's script and its fetches (/api/chat and
// this page).
const buildCSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// buildConversations is how many of the builder's conversations the page lists.
const buildConversations = 30

// starterPrompts are offered to a person with no conversation yet.
var starterPrompts = []string{
	"An agent for my bakery that answers questions about opening hours and takes orders by phone",
	"A support agent for my online shop that answers from our FAQ page and hands angry customers to a person",
	"A receptionist for my dental practice that books appointments by SMS, in English and Spanish",
}

type buildData struct {
	Models        []string // the models whose vendor is configured, the first preselected
	Conversations []buildConversation
	Thread        *buildThread
	Starters      []string
	CanTurn       bool // access.Turns
}

// buildConversation is one of the builder's conversations as the list links it.
type buildConversation struct {
	Ref      string
	When     time.Time
	Messages int
	Current  bool
}

func (h *dash) buildPage(w http.ResponseWriter, r *http.Request, p store.Principal) {
	ctx := r.Context()
	d := buildData{Models: h.BuilderModels, Starters: starterPrompts, CanTurn: p.Access().Allows(access.Turns)}
	rows, err := h.Store.ListConversations(ctx, p.WorkspaceID, store.ConversationFilter{Channel: "api", Limit: 200})
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	ref := r.URL.Query().Get("c")
	for _, c := range rows {
		if c.AgentID != nil || len(d.Conversations) == buildConversations {
			continue // a deployed agent's conversation, not the builder's
		}
		d.Conversations = append(d.Conversations, buildConversation{Ref: c.ShortID, When: c.CreatedAt, Messages: c.MessageSeq, Current: c.ShortID == ref})
	}
	if ref != "" {
		if d.Thread, err = h.buildThreadOf(r, p, ref); err != nil {
			h.fail(w, r, p, err)
			return
		}
	}
	w.Header().Set("Content-Security-Policy", buildCSP)
	h.render(w, r, http.StatusOK, "build", view{Title: "Build", Nav: "build", P: p, Data: d})
}

// BuilderModels lists the catalog's models whose vendor family has a key, the default model
// first: the models on which the builder assistant can call its tools. The local responder
// (a family without a key, in development) never calls tools, so its models are left out;
// an empty list makes the Build page say how to configure one.
func BuilderModels(cat *catalog.Catalog, families map[string]llm.FamilyConfig) []string {
	var out []string
	for _, m := range cat.All() {
		if families[string(m.Family)].APIKey == "" {
			continue
		}
		if m.ID == catalog.DefaultModel {
			out = slices.Insert(out, 0, m.ID)
			continue
		}
		out = append(out, m.ID)
	}
	return out
}
