package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/manage"
	"switchboard/openapi"
	"switchboard/store"
	"switchboard/webchat"
)

// The public webchat routes serve the embeddable widget of one webchat deployment. They take
// no API key: the deployment id in the path names the agent, the deployment's
// config.allowed_origins names the pages that may use it (empty: any), and a visitor token
// issued by the server ties a visitor to their own conversation. Their contract is
// openapi/embed.yaml (served at /openapi/embed.yaml), not openapi/api.yaml: that document is
// the keyed management surface, and these routes sit outside /api, beside the widget's
// script, with their own CORS and budgets (README, Webchat).
func (s *Server) routeWebchat(e *echo.Echo) {
	e.GET("/openapi/embed.yaml", staticBlob("application/yaml", openapi.EmbedYAML))
	e.GET("/embed/static/widget.js", staticAsset("text/javascript; charset=utf-8", webchat.Widget))
	e.GET("/embed/static/widget.css", staticAsset("text/css; charset=utf-8", webchat.WidgetCSS))
	e.GET("/embed/:id/config", s.webchatConfig)
	e.OPTIONS("/embed/:id/config", s.webchatPreflight)
	e.POST("/embed/:id/chat", s.webchatChat, s.bodyLimit())
	e.OPTIONS("/embed/:id/chat", s.webchatPreflight)
	e.GET("/embed/:id/stream", s.webchatStream)
}

// publicPermission is the x-permission of every operation of openapi/embed.yaml: no key, no
// role. It is no permission of the access table, so routePermissions refuses it on /v1 and
// /api, and checkEmbedContract refuses anything else on the embed routes: a keyless route is
// always a decision written in the contract.
const publicPermission = "public"

var embedText sync.Once

// checkEmbedContract refuses to start when an operation of openapi/embed.yaml is not marked
// public (x-permission: public, security: []).
func checkEmbedContract() error {
	// The loader and the widget's files are text: kin-openapi (the contract checks) reads them
	// as such.
	embedText.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
	})
	spec, err := openapi3.NewLoader().LoadFromData(openapi.EmbedYAML)
	if err != nil {
		return fmt.Errorf("openapi/embed.yaml: %w", err)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if p, _ := op.Extensions[permissionExtension].(string); p != publicPermission || op.Security == nil || len(*op.Security) != 0 {
				return fmt.Errorf("openapi/embed.yaml: %s %s: every embed route must be %s: %s and security: []", method, path, permissionExtension, publicPermission)
			}
		}
	}
	return nil
}

// webchatTokens signs the visitor tokens with cfg.WebchatTokenKey when set, else with a key
// derived from SECRETS_KEY (HKDF, label webchat.KeyLabel; SECRETS_KEY_PREVIOUS's still
// checks during a rotation), so that a token outlives a restart and works on every replica.
// Without SECRETS_KEY (production with no keyring) the key is random per process: a visitor
// then starts a new conversation after a restart.
func webchatTokens(cfg Config, st *store.Store) (*webchat.Tokens, error) {
	if len(cfg.WebchatTokenKey) > 0 {
		return webchat.NewTokens(cfg.WebchatTokenKey), nil
	}
	if st == nil || st.Secrets() == nil {
		return webchat.NewTokens(), nil
	}
	keys, err := st.Secrets().Derive(webchat.KeyLabel)
	if err != nil {
		return nil, err
	}
	return webchat.NewTokens(keys...), nil
}

// webchatDeployment loads the webchat deployment of the path and answers CORS for the
// request's origin: an origin outside config.allowed_origins is refused with 403 and gets no
// Access-Control-Allow-Origin.
func (s *Server) webchatDeployment(c echo.Context) (store.WebchatDeployment, error) {
	notFound := apierr.NotFound("id", "deployment_not_found", "No such webchat deployment.")
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return store.WebchatDeployment{}, notFound
	}
	d, err := s.store.WebchatDeploymentByID(c.Request().Context(), id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && d.ChannelType != string(blueprint.ChannelWebchat)) {
		return d, notFound
	}
	if err != nil {
		return d, err
	}
	cfg, err := webchat.ParseConfig(d.Config)
	origin := c.Request().Header.Get(echo.HeaderOrigin)
	h := c.Response().Header()
	h.Add(echo.HeaderVary, echo.HeaderOrigin)
	if err != nil || !cfg.Allows(origin, s.cfg.PublicBaseURL) {
		return d, &apierr.Error{Kind: apierr.KindPermission, Code: "origin_not_allowed",
			Message: "This page's origin may not use this chat (the deployment's config.allowed_origins)."}
	}
	if origin != "" {
		h.Set(echo.HeaderAccessControlAllowOrigin, origin)
		h.Set(echo.HeaderAccessControlExposeHeaders, "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset")
	}
	return d, nil
}

func (s *Server) webchatPreflight(c echo.Context) error {
	if _, err := s.webchatDeployment(c); err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderAccessControlAllowMethods, "GET, POST, OPTIONS")
	h.Set(echo.HeaderAccessControlAllowHeaders, "Content-Type, Accept")
	h.Set(echo.HeaderAccessControlMaxAge, "600")
	return c.NoContent(http.StatusNoContent)
}

// webchatAgent is the deployment's agent, when it replies: a disabled agent is 409.
func (s *Server) webchatAgent(c echo.Context, d store.WebchatDeployment) (store.Agent, *blueprint.Blueprint, error) {
	a, err := s.store.AgentByID(c.Request().Context(), d.WorkspaceID, d.AgentID)
	if err != nil {
		return a, nil, apierr.WithParam(err, "id")
	}
	if a.Status != string(manage.AgentEnabled) {
		return a, nil, apierr.Conflict("agent_disabled", "This chat is unavailable right now.")
	}
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return a, nil, err
	}
	return a, &bp, nil
}

// webchatBootstrap is what the widget shows before the first message.
type webchatBootstrap struct {
	DisplayName string  `json:"display_name"`
	Greeting    string  `json:"greeting"`
	Disclosure  *string `json:"disclosure"` // shown above the conversation when it applies
	Language    string  `json:"language"`
	// Available is false when the workspace's budget rules refuse new messages (no credit,
	// the monthly spend cap reached, suspended): the widget says the chat is paused.
	Available       bool    `json:"available"`
	Unavailable     *string `json:"unavailable_reason"` // paused; null when available
	MaxMessageChars int     `json:"max_message_chars"`
}

// webchatPaused is the visitor's side of the workspace's budget rules: a suspended workspace,
// one without credit, or one whose monthly spend cap is reached takes no message (403
// insufficient_quota; the bootstrap says available: false), and the widget says the chat is
// paused. The management details (balance, cap, hints) are not shown to visitors.
func webchatPaused(d store.WebchatDeployment) error {
	if workspaceMayWork(store.Principal{WorkspaceName: d.WorkspaceName, WorkspaceState: d.WorkspaceStatus, BalanceNanoUSD: d.BalanceNanoUSD}) != nil ||
		store.CapReached(d.MonthlyCapNanoUSD, d.MonthSpendNanoUSD) {
		return apierr.Quota("This chat is paused right now. Please try again later.")
	}
	return nil
}

// webchatConfig serves GET /embed/{deploymentId}/config.
func (s *Server) webchatConfig(c echo.Context) error {
	d, err := s.webchatDeployment(c)
	if err != nil {
		return err
	}
	a, bp, err := s.webchatAgent(c, d)
	if err != nil {
		return err
	}
	out := webchatBootstrap{DisplayName: bp.Agent.Persona.DisplayName, Greeting: bp.Agent.Persona.Greeting,
		Language: bp.Agent.Language, Available: true, MaxMessageChars: converse.MaxMessageChars}
	if err := webchatPaused(d); err != nil {
		msg := apierr.As(err).Message
		out.Available, out.Unavailable = false, &msg
	}
	if out.DisplayName == "" {
		out.DisplayName = a.Name
	}
	deployed, err := s.store.AgentDeployments(c.Request().Context(), d.WorkspaceID, d.AgentID)
	if err != nil {
		return err
	}
	if disc := manage.DisclosureFor(a, bp, deployed, string(blueprint.ChannelWebchat)); disc.Applies {
		text := disc.SpokenText
		out.Disclosure = &text
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusOK, out)
}

// webchatMessage is the body of POST /embed/{deploymentId}/chat.
type webchatMessage struct {
	Message      string `json:"message"`
	VisitorToken string `json:"visitor_token"` // from an earlier reply; empty opens a conversation
	Stream       bool   `json:"stream"`
}

// webchatReply is the JSON answer (and the `done` frame) of a webchat message.
type webchatReply struct {
	VisitorToken string               `json:"visitor_token"`
	Reply        string               `json:"reply"`
	Status       string               `json:"status"`
	Escalation   *converse.Escalation `json:"escalation"`
}

// webchatChat serves POST /embed/{deploymentId}/chat: the same turn as
// POST /api/agents/{id}/chat, on the webchat channel, as JSON or as SSE frames
// (`conversation` with the visitor token, `delta`..., `done` or `error`).
func (s *Server) webchatChat(c echo.Context) error {
	d, err := s.webchatDeployment(c)
	if err != nil {
		return err
	}
	var body webchatMessage
	if err := json.NewDecoder(c.Request().Body).Decode(&body); err != nil {
		return apierr.Invalid("body", "invalid_json", "The body must be a JSON object with a message.")
	}
	// The budgets come first, so that refused requests count too: the visitor is their
	// conversation when the token is good, their address otherwise.
	conversation, tokenOK := "", true
	if body.VisitorToken != "" {
		conversation, tokenOK = s.visitors.Conversation(d.ID, body.VisitorToken)
	}
	visitor := "ip:" + c.RealIP()
	if conversation != "" {
		visitor = "conv:" + conversation
	}
	buckets := []budget{{"wcv:" + d.ID.String() + ":" + visitor, webchat.VisitorRPM}, {"wcd:" + d.ID.String(), webchat.DeploymentRPM}}
	res, err := s.spend(c.Request().Context(), buckets)
	if err != nil {
		return err
	}
	setRateHeaders(c, res)
	if !res.Allowed {
		if s.limited != nil {
			s.limited("webchat")
		}
		return &apierr.Error{Kind: apierr.KindRateLimited, Code: "rate_limit_exceeded",
			Message: "Too many messages: please wait a moment before sending another."}
	}
	if !tokenOK {
		return apierr.Invalid("visitor_token", "visitor_token_invalid", "The visitor token is not one this chat issued; start a new conversation without it.")
	}
	if n := utf8.RuneCountInString(body.Message); strings.TrimSpace(body.Message) == "" || n > converse.MaxMessageChars {
		return apierr.Invalid("message", "invalid_value", "message must be 1 to %d characters, and not only spaces.", converse.MaxMessageChars)
	}
	if conversation != "" {
		switch _, err := s.store.WebchatBlockedVisitor(c.Request().Context(), d.WorkspaceID, conversation); {
		case err == nil:
			return &apierr.Error{Kind: apierr.KindPermission, Code: "visitor_blocked", Message: "This chat is not available to you."}
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
	}
	if err := webchatPaused(d); err != nil {
		return err
	}
	if _, _, err := s.webchatAgent(c, d); err != nil {
		return err
	}
	if s.agents == nil {
		return apierr.Internal(errors.New("server: the agent runtime is not wired"))
	}
	in := converse.Request{WorkspaceID: d.WorkspaceID, AgentID: d.AgentID, Message: body.Message,
		ConversationID: conversation, Channel: string(blueprint.ChannelWebchat)}
	ctx := c.Request().Context()
	if !body.Stream && !strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream") {
		out, err := s.agents.Chat(ctx, in)
		if err != nil {
			return publicChatError(err)
		}
		return c.JSON(http.StatusOK, webchatReply{VisitorToken: s.visitors.Issue(d.ID, out.ConversationID), Reply: out.Reply,
			Status: out.Status, Escalation: out.Escalation})
	}
	w := &sseWriter{w: c.Response()}
	token := ""
	in.OnConversation = func(id string) error {
		token = s.visitors.Issue(d.ID, id)
		return w.event("conversation", map[string]string{"visitor_token": token})
	}
	in.OnDelta = func(text string) error {
		if text == "" {
			return nil
		}
		return w.event("delta", map[string]string{"text": text})
	}
	out, err := s.agents.Chat(ctx, in)
	if err != nil {
		err = publicChatError(err)
		if !w.started {
			return err
		}
		return w.event("error", errorFrame(err))
	}
	return w.event("done", webchatReply{VisitorToken: token, Reply: out.Reply, Status: out.Status, Escalation: out.Escalation})
}

// publicChatError keeps a turn's failure fit for a visitor: a disabled agent is
// "unavailable", and the management hints (update_agent, ...) are not shown.
func publicChatError(err error) error {
	e := apierr.As(err)
	if e == nil {
		return err
	}
	if e.Code == "agent_disabled" {
		return apierr.Conflict("agent_disabled", "This chat is unavailable right now.")
	}
	copied := *e
	copied.Hint = ""
	return &copied
}

// staticAsset serves a widget file to any page (CORS: the loader adds it from the host page).
func staticAsset(contentType string, body []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderAccessControlAllowOrigin, "*")
		h.Set(echo.HeaderCacheControl, "public, max-age=3600")
		return c.Blob(http.StatusOK, contentType, body)
	}
}
