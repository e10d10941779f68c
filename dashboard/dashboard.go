// Package dashboard is the workspace's web pages: sign-in, overview, the team inbox, agents,
// conversations, channels, keys, webhooks, settings and the audit log. Pages are rendered on the server
// (html/template) from templates and a stylesheet embedded in the binary: no front-end build,
// nothing from another site, and no script but the Events page's small live view
// (static/events.js), the Inbox page's live queue (static/inbox.js), the Channels page's
// Copy buttons (static/channels.js), the Build page's chat with the builder assistant
// (static/build.js) and the agent page's blueprint editor (static/agent.js), each allowed by
// its own page's Content-Security-Policy only. Forms post plainly; a state-changing request from another site
// is refused (http.CrossOriginProtection), and the session cookie is HttpOnly and SameSite=Lax.
//
// Every button asks the permission table (access) before it is shown, and every handler
// asks it again before it acts, so a viewer sees no create or revoke button and is refused
// anyway when posting by hand.
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"switchboard/access"
	"switchboard/accounts"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/channels"
	"switchboard/compliance"
	"switchboard/events"
	"switchboard/inbox"
	"switchboard/mailer"
	"switchboard/manage"
	"switchboard/oauth"
	"switchboard/store"
	"switchboard/workflows"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the dashboard is mounted.
const Prefix = "/dashboard"

// Deps are the dashboard's collaborators.
type Deps struct {
	Store    *store.Store
	Accounts *accounts.Service
	Ops      *manage.Service
	Channels *channels.Service // the Channels page
	Webhooks *events.Endpoints // the Webhooks page: endpoints, redeliveries
	// Compliance is the outbound compliance acknowledgment, accepted on the Settings page.
	Compliance *compliance.Service
	// Mailer sends invitations when SMTP_URL is set; nil sends none (the link is shown anyway).
	Mailer *mailer.Sender
	// Inbox is the team inbox: the Inbox page and the navigation's count of waiting
	// conversations (nil: neither).
	Inbox *inbox.Service
	// Catalog checks blueprints in the agent page's editor.
	Catalog *catalog.Catalog
	// BuilderModels are the models the Build page's assistant can run on (BuilderModels):
	// none makes the page say how to configure one.
	BuilderModels []string
	Log           *slog.Logger
	// Workflows is the Workflows page and the runs' timelines (nil: no such page).
	Workflows *workflows.Service
}

type dash struct {
	Deps
	pages map[string]*template.Template
	oauth *oauth.Service // MCP over OAuth: the authorization page and the grants on the keys page
}

// New builds the dashboard's handler, to be mounted at Prefix.
func New(d Deps) http.Handler {
	h := &dash{Deps: d, pages: parsePages(), oauth: oauth.New(d.Store)}
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", cacheStatic(http.FileServerFS(static))))
	mux.HandleFunc("GET "+Prefix+"/sign-in", h.signInPage)
	mux.HandleFunc("POST "+Prefix+"/sign-in", h.signIn)
	mux.HandleFunc("GET "+accounts.SetPasswordPath, h.setPasswordPage)
	mux.HandleFunc("POST "+accounts.SetPasswordPath, h.setPassword)
	mux.HandleFunc("POST "+Prefix+"/sign-out", h.signOut)
	mux.HandleFunc("POST "+Prefix+"/sign-out-everywhere", h.signed(access.Read, h.signOutEverywhere))
	mux.HandleFunc("GET "+Prefix+"/{$}", h.signed(access.Read, h.overview))
	mux.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	mux.HandleFunc("GET "+Prefix+"/agents", h.signed(access.Read, h.agents))
	mux.HandleFunc("GET "+Prefix+"/agents/{id}", h.signed(access.Read, h.agent))
	mux.HandleFunc("POST "+Prefix+"/agents/{id}/status", h.signed(access.AgentsWrite, h.setAgentStatus))
	h.routeBuilder(mux)
	mux.HandleFunc("GET "+Prefix+"/conversations", h.signed(access.Read, h.conversations))
	mux.HandleFunc("GET "+Prefix+"/conversations/{ref}", h.signed(access.Read, h.transcript))
	if d.Inbox != nil {
		mux.HandleFunc("GET "+Prefix+"/inbox", h.signed(access.Read, h.inboxPage))
		mux.HandleFunc("POST "+Prefix+"/inbox/me", h.signed(access.Inbox, h.inboxMine))
		mux.HandleFunc("POST "+Prefix+"/inbox/{ref}/assign", h.signed(access.Inbox, h.inboxAct(h.inboxAssign)))
		mux.HandleFunc("POST "+Prefix+"/inbox/{ref}/reply", h.signed(access.Inbox, h.inboxAct(h.inboxReply)))
		mux.HandleFunc("POST "+Prefix+"/inbox/{ref}/note", h.signed(access.Inbox, h.inboxAct(h.inboxNote)))
		mux.HandleFunc("POST "+Prefix+"/inbox/{ref}/release", h.signed(access.Inbox, h.inboxAct(h.inboxRelease)))
		mux.HandleFunc("POST "+Prefix+"/inbox/{ref}/close", h.signed(access.Inbox, h.inboxAct(h.inboxClose)))
	}
	mux.HandleFunc("GET "+Prefix+"/channels", h.signed(access.Read, h.channelsPage))
	mux.HandleFunc("POST "+Prefix+"/channels", h.signed(access.Channels, h.connectChannel))
	mux.HandleFunc("POST "+Prefix+"/channels/{id}/check", h.signed(access.Channels, h.checkChannel))
	mux.HandleFunc("GET "+Prefix+"/channels/{id}/delete", h.signed(access.Channels, h.confirmDeleteChannel))
	mux.HandleFunc("POST "+Prefix+"/channels/{id}/delete", h.signed(access.Channels, h.deleteChannel))
	h.routeWorkflows(mux)
	mux.HandleFunc("GET "+Prefix+"/keys", h.signed(access.Keys, h.keys))
	mux.HandleFunc("POST "+Prefix+"/keys", h.signed(access.Keys, h.createKey))
	mux.HandleFunc("POST "+Prefix+"/keys/{id}/revoke", h.signed(access.Keys, h.revokeKey))
	mux.HandleFunc("POST "+Prefix+"/keys/oauth/{id}/revoke", h.signed(access.Keys, h.revokeOAuthGrant))
	mux.HandleFunc("GET "+oauth.AuthorizePath, h.signed(access.Read, h.oauthAuthorize))
	mux.HandleFunc("POST "+oauth.AuthorizePath, h.signed(access.Read, h.oauthDecide))
	mux.HandleFunc("GET "+Prefix+"/events", h.signed(access.Read, h.events))
	mux.HandleFunc("GET "+Prefix+"/webhooks", h.signed(access.Read, h.webhooks))
	mux.HandleFunc("POST "+Prefix+"/webhooks/{ref}/enable", h.signed(access.Webhooks, h.enableWebhook))
	mux.HandleFunc("POST "+Prefix+"/webhooks/{ref}/redeliver", h.signed(access.Webhooks, h.redeliver))
	mux.HandleFunc("GET "+Prefix+"/audit-log", h.signed(access.Audit, h.auditLog))
	mux.HandleFunc("GET "+Prefix+"/settings", h.signed(access.Read, h.settings))
	mux.HandleFunc("POST "+Prefix+"/settings/cap", h.signed(access.Settings, h.setCap))
	mux.HandleFunc("POST "+Prefix+"/settings/compliance", h.signed(access.Settings, h.acceptCompliance))
	mux.HandleFunc("POST "+Prefix+"/settings/invite", h.signed(access.Settings, h.invite))
	mux.HandleFunc("POST "+Prefix+"/settings/members/{id}/role", h.signed(access.Settings, h.setRole))
	mux.HandleFunc("POST "+Prefix+"/settings/oauth/{id}/revoke", h.signed(access.Read, h.revokeOAuthGrant)) // one's own
	mux.HandleFunc(Prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, store.Principal{}, apierr.NotFound("", "page_not_found", "No such page."))
	})
	var handler http.Handler = mux
	handler = d.Accounts.Sessions().LoadAndSave(handler)
	handler = crossOrigin(d.Accounts, handler)
	return securityHeaders(handler)
}

// securityHeaders: nothing but this site's own styles and images, no framing, no sniffing,
// no caching of pages that show workspace data.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		if !strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

// crossOrigin refuses a state-changing request sent by a page of another site.
func crossOrigin(acc *accounts.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := acc.CheckCrossOrigin(r); err != nil {
			http.Error(w, "Cross-site request refused: post the form from the dashboard itself.", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

type pageFunc func(w http.ResponseWriter, r *http.Request, p store.Principal)

// signed runs fn for a signed-in user whose role holds perm. Without a session it leads to
// the sign-in page, except in development, where the development user is signed in.
func (h *dash) signed(perm access.Permission, fn pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		p, ok, err := h.Accounts.Principal(ctx)
		if err != nil {
			h.fail(w, r, p, err)
			return
		}
		if !ok && h.Accounts.Development() {
			if p, ok, err = h.developmentSignIn(ctx); err != nil {
				h.fail(w, r, p, err)
				return
			}
		}
		if !ok {
			next := r.URL.RequestURI() // with its query: the OAuth authorization page needs it back
			if r.Method != http.MethodGet {
				next = Prefix + "/"
			}
			http.Redirect(w, r, Prefix+"/sign-in?next="+url.QueryEscape(next), http.StatusSeeOther)
			return
		}
		if need := access.Needs(perm); !p.Access().Allows(perm) {
			h.fail(w, r, p, &apierr.Error{Kind: apierr.KindPermission, Code: "role_not_allowed",
				Message: pageWhat(r) + " needs the " + need.String() + " role; you are a " + p.Role + " of this workspace."})
			return
		}
		// The changes the page makes are recorded in the audit log under the signed-in person.
		fn(w, r.WithContext(store.WithAuditActor(ctx, store.ActorOf(p))), p)
	}
}

func pageWhat(r *http.Request) string {
	if r.Method == http.MethodGet {
		return "This page"
	}
	return "This action"
}

func (h *dash) developmentSignIn(ctx context.Context) (store.Principal, bool, error) {
	u, err := h.Accounts.DevelopmentUser(ctx)
	if err != nil {
		return store.Principal{}, false, err
	}
	if err := h.Accounts.StartSession(ctx, u); err != nil {
		return store.Principal{}, false, err
	}
	return h.Accounts.Principal(ctx)
}

// view is what every page template gets.
type view struct {
	Title   string
	Nav     string
	P       store.Principal
	Flash   string
	Error   string
	Status  int
	Data    any
	Signed  bool
	DevMode bool
	// Inbox: the navigation links the Inbox page; Waiting is its count of conversations
	// waiting for a person.
	Inbox   bool
	Waiting int64
}

func (h *dash) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	t, ok := h.pages[page]
	if !ok {
		panic("dashboard: no template " + page)
	}
	v.Signed = v.P.UserID.String() != "00000000-0000-0000-0000-000000000000"
	v.DevMode = h.Accounts.Development()
	if v.Flash == "" && v.Signed {
		v.Flash = h.Accounts.Sessions().PopString(r.Context(), "flash")
	}
	if v.Signed && h.Inbox != nil {
		v.Inbox, v.Waiting = true, h.waitingCount(r.Context(), v.P)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		h.Log.Error("dashboard template", slog.String("page", page), slog.Any("error", err))
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail shows an error page: the domain error's status and message, or a generic 500.
func (h *dash) fail(w http.ResponseWriter, r *http.Request, p store.Principal, err error) {
	status, msg := http.StatusInternalServerError, "Something went wrong on our side; it has been logged."
	var nf *store.NotFoundError
	if e := store.Unavailability(err); e != nil {
		status, msg = e.Status(), "The database is unavailable for a moment; nothing was done. Try again in a few seconds."
		w.Header().Set("Retry-After", "2")
	} else if errors.As(err, &nf) {
		status, msg = http.StatusNotFound, "No "+nf.What+" with that id in this workspace."
	} else if e := apierr.As(err); e != nil {
		status, msg = e.Status(), e.Message
	} else {
		h.Log.Error("dashboard", slog.String("path", r.URL.Path), slog.Any("error", err))
	}
	h.render(w, r, status, "error", view{Title: http.StatusText(status), P: p, Error: msg, Status: status})
}

// flash shows msg on the next page, then redirects there (post, redirect, get).
func (h *dash) flash(w http.ResponseWriter, r *http.Request, to, msg string) {
	h.Accounts.Sessions().Put(r.Context(), "flash", msg)
	http.Redirect(w, r, to, http.StatusSeeOther) //nolint:gosec // to is a path of the dashboard that the handler wrote
}

func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"allows": func(p store.Principal, perm string) bool { return p.Access().Allows(access.Permission(perm)) },
		"usd":    usd,
		"money":  moneyHTML,
		"when": func(t any) string {
			switch v := t.(type) {
			case time.Time:
				return v.UTC().Format("2006-01-02 15:04 UTC")
			case *time.Time:
				if v == nil {
					return "never"
				}
				return v.UTC().Format("2006-01-02 15:04 UTC")
			}
			return fmt.Sprint(t)
		},
		"iso":  func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"join": strings.Join,
		"deref": func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		},
		"derefInt": func(i *int) string {
			if i == nil {
				return "—"
			}
			return fmt.Sprint(*i)
		},
		"ms": func(d time.Duration) int64 { return d.Milliseconds() },
		"derefInt64": func(i *int64) int64 {
			if i == nil {
				return 0
			}
			return *i
		},
		// triggerText says what starts a workflow's runs (dashboard/workflows.go).
		"triggerText": triggerText,
	}
	layout := template.Must(template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		out[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFS, n))
	}
	return out
}
