package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"switchboard/accounts"
	"switchboard/oauth"
	"switchboard/store"
)

// The authorization endpoint of MCP over OAuth (package oauth): the signed-in user sees which
// client asks to use Switchboard's MCP tools as them, with which role in which workspace, and
// approves or denies. Without a session, signed() leads to the sign-in page and back here
// with the request's query. The decision is a plain form post (cross-origin protected like
// every dashboard form); its answer is a redirect to the client's registered redirect URI.

type oauthData struct {
	Req    oauth.Request
	Params []oauthParam
	Target string // where the answer goes, shown to the user
}

type oauthParam struct{ Name, Value string }

var oauthParams = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "scope", "resource"}

func (h *dash) issuer(r *http.Request) string {
	if b := h.Accounts.PublicBaseURL(); b != "" {
		return b
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (h *dash) oauthAuthorize(w http.ResponseWriter, r *http.Request, p store.Principal) {
	q := r.URL.Query()
	req, err := h.oauth.CheckAuthorize(r.Context(), q)
	if h.oauthRefused(w, r, p, req, err) {
		return
	}
	d := oauthData{Req: req, Target: req.RedirectURI}
	for _, n := range oauthParams {
		if v := q.Get(n); v != "" {
			d.Params = append(d.Params, oauthParam{n, v})
		}
	}
	// The approval's answer is a redirect to the client: the page's form-action must allow it.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self' "+
		cspSource(req.RedirectURI)+"; frame-ancestors 'none'; base-uri 'none'")
	h.render(w, r, http.StatusOK, "oauth", view{Title: "Authorize " + req.Client.Name, P: p, Data: d})
}

// cspSource is the CSP source expression of a redirect URI: its origin, or its scheme for a
// private-use scheme.
func cspSource(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return strings.ToLower(u.Scheme) + ":"
	}
	return u.Scheme + "://" + u.Host
}

func (h *dash) oauthDecide(w http.ResponseWriter, r *http.Request, p store.Principal) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, p, err)
		return
	}
	req, err := h.oauth.CheckAuthorize(r.Context(), r.PostForm)
	if h.oauthRefused(w, r, p, req, err) {
		return
	}
	issuer := h.issuer(r)
	if r.PostForm.Get("decision") != "approve" {
		http.Redirect(w, r, oauth.ErrorRedirect(req, issuer, &oauth.Error{Code: "access_denied", Description: "The user denied the request."}), http.StatusSeeOther) //nolint:gosec // a redirect URI the client registered, checked by CheckAuthorize
		return
	}
	to, err := h.oauth.Approve(r.Context(), req, p, issuer)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther) //nolint:gosec // a redirect URI the client registered, checked by CheckAuthorize
}

// oauthRefused answers a refused authorization request: to the user when the client cannot be
// trusted with the answer, else to the client's redirect URI. False when err is nil.
func (h *dash) oauthRefused(w http.ResponseWriter, r *http.Request, p store.Principal, req oauth.Request, err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, oauth.ErrNoRedirect) {
		msg := err.Error()
		if _, after, ok := strings.Cut(msg, "\n"); ok {
			msg = after
		}
		h.render(w, r, http.StatusBadRequest, "error", view{Title: "Bad authorization request", P: p, Status: http.StatusBadRequest,
			Error: "This authorization request cannot be answered: " + msg})
		return true
	}
	var oe *oauth.Error
	if errors.As(err, &oe) {
		http.Redirect(w, r, oauth.ErrorRedirect(req, h.issuer(r), oe), http.StatusSeeOther) //nolint:gosec // a registered redirect URI, checked by CheckAuthorize
		return true
	}
	h.fail(w, r, p, err)
	return true
}

func (h *dash) revokeOAuthGrant(w http.ResponseWriter, r *http.Request, p store.Principal) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		h.fail(w, r, p, &store.NotFoundError{What: "authorization"})
		return
	}
	if err := accounts.RevokeOAuthGrant(r.Context(), h.Store, p, id); err != nil {
		h.fail(w, r, p, err)
		return
	}
	to := Prefix + "/keys"
	if strings.HasPrefix(r.URL.Path, Prefix+"/settings/") {
		to = Prefix + "/settings#mcp-clients"
	}
	h.flash(w, r, to, "The MCP authorization was revoked: its tokens no longer work.")
}
