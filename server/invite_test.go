package server_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/mailer/mailtest"
)

// TestInviteFromTheSettingsPage: an admin invites someone from the Settings page; the link is
// shown and emailed (SMTP_URL set); opening it and choosing a password signs the invited
// person in with the role given. Nobody invites above their own role, and a member does not
// invite at all.
func TestInviteFromTheSettingsPage(t *testing.T) {
	t.Parallel()
	sink := mailtest.New(t)
	b := setup(t, func(o *setupOpts) { o.smtpURL = sink.URL() })
	admin := b.signedIn(t, "admin")
	post := func(br *browser, email, role string) (int, string) {
		resp, err := br.client.PostForm(b.url+"/dashboard/settings/invite", url.Values{"email": {email}, "role": {role}})
		require.NoError(t, err)
		return resp.StatusCode, string(readAll(t, resp))
	}

	status, page := post(admin, "owner-to-be@example.com", "owner")
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, page, "up to your own (admin)")
	status, page = post(admin, "not an email", "member")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, "is not an email address")
	status, _ = post(b.signedIn(t, "member"), "someone@example.com", "viewer")
	require.Equal(t, http.StatusForbidden, status)

	status, page = post(admin, "New.Person@Example.com", "member")
	require.Equal(t, http.StatusOK, status, page)
	require.Contains(t, page, "new.person@example.com is invited as member")
	m := regexp.MustCompile(`<code id="invite-link">([^<]+)</code>`).FindStringSubmatch(page)
	require.NotNil(t, m, page)
	link := html.UnescapeString(m[1])
	require.True(t, strings.HasPrefix(link, "http://switchboard.test/dashboard/set-password?token="), link)
	mail := waitMail(t, sink, 1)[0]
	require.Equal(t, []string{"new.person@example.com"}, mail.To)
	require.Contains(t, mail.Subject, "invited")
	require.Contains(t, mail.Body, link)
	status, _ = post(admin, "new.person@example.com", "member")
	require.Equal(t, http.StatusBadRequest, status, "invited once")

	// The members list shows the invitation until the password is set.
	resp, err := admin.client.Get(b.url + "/dashboard/settings")
	require.NoError(t, err)
	require.Regexp(t, `new.person@example.com</td><td>member</td><td>[^<]*<span class="badge off">invited`, string(readAll(t, resp)))

	// Accepting: the link's page, a password, and the person is signed in.
	invited := b.newBrowser(t)
	token := strings.TrimPrefix(link, "http://switchboard.test/dashboard/set-password?token=")
	resp, err = invited.client.Get(b.url + "/dashboard/set-password?token=" + token)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(readAll(t, resp)), "new.person@example.com")
	resp, err = invited.client.PostForm(b.url+"/dashboard/set-password", url.Values{"token": {token}, "password": {testPassword}, "confirm": {testPassword}})
	require.NoError(t, err)
	_ = readAll(t, resp)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	resp, err = invited.client.Get(b.url + "/dashboard/")
	require.NoError(t, err)
	page = string(readAll(t, resp))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "new.person@example.com · member of")
	// The link worked once.
	resp, err = b.newBrowser(t).client.Get(b.url + "/dashboard/set-password?token=" + token)
	require.NoError(t, err)
	_ = readAll(t, resp)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
