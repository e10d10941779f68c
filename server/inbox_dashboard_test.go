package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInboxPageCountAndRoles: every signed page's navigation counts the conversations
// waiting for a person; a viewer reads the Inbox page, the conversation included, but gets
// no action form and is refused when posting anyway; a member's refused action is shown
// clearly on the conversation, with the text typed kept; a claim takes the conversation off
// the count.
func TestInboxPageCountAndRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	var refs []string
	for range 2 {
		v := &visitor{b: b, dep: dep}
		require.Equal(t, "escalated", v.say(t, "Can I talk to a real person please?").Status)
	}
	queue := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations?status=escalated&assignee=none", "", 200))
	for _, c := range queue.Data {
		refs = append(refs, c.ID)
	}
	require.Len(t, refs, 2)

	member := b.signedIn(t, "member")
	viewer := b.signedIn(t, "viewer")
	count := func(n string) string {
		return `<span class="count" aria-hidden="true">` + n + `</span><span class="visually-hidden">, ` + n + ` waiting</span>`
	}
	for _, br := range []*browser{member, viewer} {
		for _, path := range []string{"/dashboard/", "/dashboard/agents", "/dashboard/settings", "/dashboard/inbox"} {
			resp, raw := br.do(t, http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, resp.StatusCode, path)
			require.Contains(t, string(raw), `<a href="/dashboard/inbox" id="nav-inbox"`, path)
			require.Contains(t, string(raw), count("2"), "%s shows 2 waiting", path)
		}
	}

	// The page's script follows the event feed and fetches the page: its own policy allows
	// both, from this site only.
	resp, raw := member.do(t, http.MethodGet, "/dashboard/inbox", "")
	require.Contains(t, string(raw), `<script src="/dashboard/static/inbox.js" defer></script>`)
	require.Regexp(t, `data-after="\d+"`, string(raw))
	csp := resp.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.Contains(t, csp, "connect-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")

	// The viewer reads everything of the conversation, and has no form to act with.
	page := func(br *browser, path string) string {
		t.Helper()
		resp, raw := br.do(t, http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return string(raw)
	}
	html := page(viewer, "/dashboard/inbox?c="+refs[0])
	for _, want := range []string{`id="thread-transcript"`, "Can I talk to a real person please?", `id="thread-trigger">user_request`, `id="thread-summary"`, `id="inbox-readonly"`} {
		require.Contains(t, html, want)
	}
	for _, absent := range []string{`action="/dashboard/inbox/`, `id="claim"`, `id="reply-text"`, `id="note-text"`, `id="release"`, `id="close"`, `id="prefs-form"`} {
		require.NotContains(t, html, absent, "a viewer has no action forms")
	}
	html = page(member, "/dashboard/inbox?c="+refs[0])
	for _, want := range []string{`action="/dashboard/inbox/` + refs[0] + `/assign"`, `id="reply-text"`, `id="note-text"`, `id="release"`, `id="close"`, `id="prefs-form"`} {
		require.Contains(t, html, want, "a member acts")
	}
	form := func(v url.Values) string { return v.Encode() }
	formType := []string{"Content-Type", "application/x-www-form-urlencoded"}
	for _, action := range []string{"assign", "reply", "note", "release", "close"} {
		resp, _ := viewer.do(t, http.MethodPost, "/dashboard/inbox/"+refs[0]+"/"+action, form(url.Values{"text": {"Forged"}}), formType...)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, action)
	}
	resp, _ = viewer.do(t, http.MethodPost, "/dashboard/inbox/me", form(url.Values{"name": {"Forged"}}), formType...)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	detail := decode[inboxView](t, b.send(t, http.MethodGet, "/api/conversations/"+refs[0], "", 200))
	require.Nil(t, detail.Assignee, "the viewer's posts changed nothing")
	require.Empty(t, detail.Notes)

	// The member claims one: one waits.
	resp, _ = member.do(t, http.MethodPost, "/dashboard/inbox/"+refs[0]+"/assign", form(url.Values{"view": {"waiting"}}), formType...)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/dashboard/inbox?c="+refs[0]+"#conversation", resp.Header.Get("Location"))
	html = page(member, "/dashboard/inbox?c="+refs[0])
	require.Contains(t, html, "You hold the conversation "+refs[0])
	require.Contains(t, html, count("1"))
	require.NotContains(t, html, `id="claim"`, "nothing to claim: it is hers")
	require.Contains(t, page(member, "/dashboard/inbox?view=mine"), `id="q-`+refs[0]+`"`)
	require.NotContains(t, page(member, "/dashboard/inbox"), `id="q-`+refs[0]+`"`, "no longer waiting")

	// Closed, a reply is refused: the reason is shown, and the text typed is given back.
	resp, _ = member.do(t, http.MethodPost, "/dashboard/inbox/"+refs[0]+"/close", "", formType...)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, _ = member.do(t, http.MethodPost, "/dashboard/inbox/"+refs[0]+"/reply", form(url.Values{"text": {"Are you still there?"}}), formType...)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	html = page(member, "/dashboard/inbox?c="+refs[0])
	require.Contains(t, html, `<p class="error" role="alert" id="inbox-error">The conversation `+refs[0]+` is closed.</p>`)
	require.Contains(t, html, "Closed: the visitor")
	require.NotContains(t, html, `id="reply-text"`, "no reply form on a closed conversation")
	resp, _ = member.do(t, http.MethodPost, "/dashboard/inbox/"+refs[1]+"/note", form(url.Values{"text": {"   "}}), formType...)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	html = page(member, "/dashboard/inbox?c="+refs[1])
	require.Contains(t, html, `id="inbox-error">text must be 1 to 4000 characters`)
	require.True(t, strings.Contains(html, `id="note-text" name="text" rows="2" required maxlength="4000" aria-describedby="note-hint">   </textarea>`))

	// Another workspace's conversation, or none: not found, said on the page.
	resp, raw = member.do(t, http.MethodGet, "/dashboard/inbox?c=mc-nosuchconversation", "")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(raw), "No conversation mc-nosuchconversation in this workspace")
}
