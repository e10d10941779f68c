// Package accounts is the dashboard's people: users of a workspace with a role, their
// passwords (argon2id), one-time set-password links, sign-in with its rate limits, and
// sessions kept in PostgreSQL (scs with its pgx store), so a sign-out ends a session on every
// replica at once.
//
// A session holds the user's id and the user's session epoch when it began. Every request
// re-reads the user, its role and its workspace, so a changed role or a suspended workspace
// applies at once, and "sign out everywhere" (or a new password) moves the epoch on, which
// ends every older session on every replica.
package accounts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/ratelimit"
	"switchboard/store"
)

// Config is what accounts need from the environment (complete: New applies no defaults but
// the zero-value fallbacks documented on each field).
type Config struct {
	Development   bool   // APP_ENV=development: the development user is signed in without a password
	PublicBaseURL string // links and the trusted origin; an https URL makes the cookie Secure and __Host-
	// SessionLifetime is how long a session lasts at most (SESSION_LIFETIME); 12h when zero.
	SessionLifetime time.Duration
	// SessionIdleTimeout ends a session unused for this long; 2h when zero.
	SessionIdleTimeout time.Duration
	// SetPasswordTTL is how long a set-password link works; 72h when zero.
	SetPasswordTTL time.Duration
	// SignInPerMinute is the sign-in attempts allowed per email and per minute (10 when zero);
	// an address gets three times as many, across emails.
	SignInPerMinute int
}

// DevelopmentEmail is the email of the development user of workspace "default".
const DevelopmentEmail = "dev@switchboard.localhost"

// DevelopmentWorkspace is the workspace of the development user.
const DevelopmentWorkspace = "default"

const (
	keyUser  = "user_id"
	keyEpoch = "epoch"
)

// Service signs people in and out.
type Service struct {
	cfg      Config
	store    *store.Store
	limiter  ratelimit.Limiter
	sessions *scs.SessionManager
	cop      *http.CrossOriginProtection
}

// New builds the service over the store (users, sessions) and the limiter that budgets
// sign-in attempts (shared between replicas when the limiter is).
func New(cfg Config, st *store.Store, limiter ratelimit.Limiter) *Service {
	if cfg.SessionLifetime <= 0 {
		cfg.SessionLifetime = 12 * time.Hour
	}
	if cfg.SessionIdleTimeout <= 0 {
		cfg.SessionIdleTimeout = 2 * time.Hour
	}
	if cfg.SetPasswordTTL <= 0 {
		cfg.SetPasswordTTL = 72 * time.Hour
	}
	if cfg.SignInPerMinute <= 0 {
		cfg.SignInPerMinute = 10
	}
	sm := scs.New()
	sm.Store = st.SessionStore()
	sm.Lifetime = cfg.SessionLifetime
	sm.IdleTimeout = cfg.SessionIdleTimeout
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false // a browser session cookie: closing the browser signs out
	if strings.HasPrefix(cfg.PublicBaseURL, "https://") {
		sm.Cookie.Secure = true
		sm.Cookie.Name = "__Host-switchboard_session" // Secure, Path=/, no Domain: no subdomain can set it
	} else {
		sm.Cookie.Name = "switchboard_session"
	}
	cop := http.NewCrossOriginProtection()
	if cfg.PublicBaseURL != "" {
		_ = cop.AddTrustedOrigin(cfg.PublicBaseURL) // an origin with a path is refused: then only same-origin
	}
	return &Service{cfg: cfg, store: st, limiter: limiter, sessions: sm, cop: cop}
}

// Sessions is the session manager; its LoadAndSave wraps the dashboard's handlers.
func (s *Service) Sessions() *scs.SessionManager { return s.sessions }

// CookieName is the name of the session cookie.
func (s *Service) CookieName() string { return s.sessions.Cookie.Name }

// Development reports whether the development user is signed in without a password.
func (s *Service) Development() bool { return s.cfg.Development }

// CheckCrossOrigin refuses a state-changing request sent from another site (Go's
// CrossOriginProtection: Sec-Fetch-Site, else Origin against Host).
func (s *Service) CheckCrossOrigin(r *http.Request) error { return s.cop.Check(r) }

// CreateUser creates a user of the workspace with a role, and returns it with a one-time
// link to set a password.
func (s *Service) CreateUser(ctx context.Context, workspace, email, role string) (store.User, string, error) {
	email, err := normalEmail(email)
	if err != nil {
		return store.User{}, "", err
	}
	if _, ok := access.ParseRole(role); !ok {
		return store.User{}, "", apierr.Invalid("role", "invalid_role", "The role must be one of %s.", strings.Join(access.Names(), ", "))
	}
	w, err := s.store.WorkspaceByName(ctx, workspace)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.User{}, "", apierr.Invalid("workspace", "workspace_not_found", "No workspace is named %q.", workspace)
		}
		return store.User{}, "", err
	}
	token, sum := newToken()
	var u store.User
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if u, err = tx.CreateUser(ctx, w.ID, email, role, sum, time.Now().Add(s.cfg.SetPasswordTTL)); err != nil {
			return err
		}
		return audit.Record(ctx, tx, w.ID, audit.MemberInvited, "user", u.ID.String(), map[string]any{"email": email, "role": role})
	})
	if errors.Is(err, store.ErrExists) {
		return store.User{}, "", apierr.Invalid("email", "email_taken", "A user with the email %s already exists.", email)
	}
	if err != nil {
		return store.User{}, "", err
	}
	u.WorkspaceName = w.Name
	return u, s.cfg.PublicBaseURL + SetPasswordPath + "?token=" + token, nil
}

// SetPasswordPath is the dashboard page of set-password links.
const SetPasswordPath = "/dashboard/set-password"

// ErrLinkInvalid is a set-password link that is unknown, used or expired.
var ErrLinkInvalid = errors.New("this link is unknown, used or expired; ask an admin for a new one")

// UserOfLink is the user a set-password link is for; ErrLinkInvalid when it does not work.
func (s *Service) UserOfLink(ctx context.Context, token string) (store.User, error) {
	sum := sha256.Sum256([]byte(token))
	u, err := s.store.UserBySetPasswordToken(ctx, sum[:])
	if errors.Is(err, store.ErrNotFound) {
		return store.User{}, ErrLinkInvalid
	}
	return u, err
}

// SetPassword sets the password of the user of a set-password link, which it uses up, and
// ends the user's other sessions.
func (s *Service) SetPassword(ctx context.Context, token, password string) (store.User, error) {
	u, err := s.UserOfLink(ctx, token)
	if err != nil {
		return store.User{}, err
	}
	if len([]rune(password)) < MinPasswordLength {
		return store.User{}, apierr.Invalid("password", "password_too_short", "The password needs at least %d characters.", MinPasswordLength)
	}
	if len(password) > 1024 {
		return store.User{}, apierr.Invalid("password", "password_too_long", "The password may have at most 1024 bytes.")
	}
	hash, err := HashPassword(password)
	if err != nil {
		return store.User{}, err
	}
	nu, err := s.store.SetPassword(ctx, u.WorkspaceID, u.ID, hash)
	nu.WorkspaceName = u.WorkspaceName
	return nu, err
}

// ErrBadCredentials is a sign-in whose email or password is wrong; which one is not said.
var ErrBadCredentials = errors.New("the email or password is wrong")

// RateLimitedError is a sign-in refused for too many attempts.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return "too many sign-in attempts; try again in " + strconv.Itoa(max(1, int(e.RetryAfter.Seconds()+0.5))) + " seconds"
}

// SignIn checks an email and password, within the attempt budgets of the email and of the
// address. It takes as long for an unknown email as for a wrong password.
func (s *Service) SignIn(ctx context.Context, email, password, addr string) (store.User, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	for _, b := range []struct {
		key string
		n   int
	}{{"signin:email:" + email, s.cfg.SignInPerMinute}, {"signin:ip:" + addr, 3 * s.cfg.SignInPerMinute}} {
		r, err := s.limiter.Take(ctx, b.key, b.n)
		if err != nil {
			return store.User{}, err
		}
		if !r.Allowed {
			return store.User{}, &RateLimitedError{RetryAfter: r.RetryAfter}
		}
	}
	u, err := s.store.UserByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.PasswordHash == "") {
		VerifyPassword(dummyHash, password)
		return store.User{}, ErrBadCredentials
	}
	if err != nil {
		return store.User{}, err
	}
	if len(password) > 1024 || !VerifyPassword(u.PasswordHash, password) {
		return store.User{}, ErrBadCredentials
	}
	if _, err := s.store.DeleteExpiredSessions(ctx); err != nil {
		return store.User{}, err
	}
	return u, nil
}

// StartSession signs u in on the session of ctx (loaded by Sessions().LoadAndSave), under a
// new token so that a token planted before the sign-in is worthless.
func (s *Service) StartSession(ctx context.Context, u store.User) error {
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	s.sessions.Put(ctx, keyUser, u.ID.String())
	s.sessions.Put(ctx, keyEpoch, u.SessionEpoch)
	return nil
}

// SignOut ends the session of ctx: its row is deleted, so no replica accepts it again.
func (s *Service) SignOut(ctx context.Context) error { return s.sessions.Destroy(ctx) }

// SignOutEverywhere ends every session of the user of p, on every replica, and this one.
func (s *Service) SignOutEverywhere(ctx context.Context, p store.Principal) error {
	if err := s.store.EndSessions(ctx, p.WorkspaceID, p.UserID); err != nil {
		return err
	}
	return s.sessions.Destroy(ctx)
}

// Principal is who the session of ctx (loaded by Sessions().LoadAndSave) acts as; false
// when nobody is signed in, or the session is of an older epoch or a deleted user.
func (s *Service) Principal(ctx context.Context) (store.Principal, bool, error) {
	id, err := uuid.Parse(s.sessions.GetString(ctx, keyUser))
	if err != nil {
		return store.Principal{}, false, nil //nolint:nilerr // no user in the session: nobody is signed in
	}
	p, epoch, err := s.store.SessionPrincipal(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Principal{}, false, nil
	}
	if err != nil {
		return store.Principal{}, false, err
	}
	if epoch != s.sessions.GetInt(ctx, keyEpoch) {
		return store.Principal{}, false, nil
	}
	return p, true, nil
}

// RequestPrincipal is who the session cookie of r acts as, for routes that do not load and
// save sessions themselves (/api): false when r carries no live session.
func (s *Service) RequestPrincipal(r *http.Request) (store.Principal, bool, error) {
	c, err := r.Cookie(s.sessions.Cookie.Name)
	if err != nil || c.Value == "" {
		return store.Principal{}, false, nil //nolint:nilerr // no cookie: nobody is signed in
	}
	ctx, err := s.sessions.Load(r.Context(), c.Value)
	if err != nil {
		return store.Principal{}, false, err
	}
	return s.Principal(ctx)
}

// DevelopmentUser is the passwordless development user (an owner of workspace "default"),
// made when missing. It exists only in development: elsewhere it is an error.
func (s *Service) DevelopmentUser(ctx context.Context) (store.User, error) {
	if !s.cfg.Development {
		return store.User{}, errors.New("the development user exists only under APP_ENV=development")
	}
	w, err := s.store.WorkspaceByName(ctx, DevelopmentWorkspace)
	if err != nil {
		return store.User{}, err
	}
	u, err := s.store.EnsureDevelopmentUser(ctx, w.ID, DevelopmentEmail)
	u.WorkspaceName = w.Name
	return u, err
}

func normalEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 || !strings.Contains(email, "@") {
		return "", apierr.Invalid("email", "invalid_email", "%q is not an email address.", email)
	}
	return email, nil
}

func newToken() (string, []byte) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token := base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	return token, sum[:]
}

// PublicBaseURL is PUBLIC_BASE_URL (empty when unset).
func (s *Service) PublicBaseURL() string { return s.cfg.PublicBaseURL }

// SetPasswordTTL is how long a set-password (invitation) link works.
func (s *Service) SetPasswordTTL() time.Duration { return s.cfg.SetPasswordTTL }
