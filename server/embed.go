package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/gen/embedapi"
	"switchboard/store"
	"switchboard/webchat"
)

// embedHandlers implement the JSON routes of openapi/embed.yaml over webchat.Service: they
// translate, and the service decides.
type embedHandlers struct{ s *Server }

var _ embedapi.StrictServerInterface = (*embedHandlers)(nil)

// routeEmbed registers the generated embed routes. Each finds its deployment first
// (embedDeployment: 404, then the origin's 403, before anything else is refused); a message's
// body is read with it (embedChatDeployment: its visitor token lets the same statement read
// whether the visitor is blocked) but refused only after those, and its budgets are spent
// before any rule refuses it (embedStrictMiddlewares), so that refused messages count too.
func (s *Server) routeEmbed(e *echo.Echo) {
	mw := map[string][]echo.MiddlewareFunc{
		"embedConfig":          {s.embedDeployment},
		"embedConfigPreflight": {s.embedDeployment},
		"embedChatPreflight":   {s.embedDeployment},
		"embedChat":            {s.bodyLimit(), s.embedChatDeployment},
	}
	h := embedapi.NewStrictHandler(&embedHandlers{s: s}, []embedapi.StrictMiddlewareFunc{s.embedBudgets, embedAccept})
	embedapi.RegisterHandlersWithOptions(e, h, embedapi.RegisterHandlersOptions{OperationMiddlewares: mw})
}

type embedDeploymentKey struct{}

// embedDeployment finds the path's webchat deployment and answers CORS for the request's
// origin: an origin the deployment refuses gets 403 and no Access-Control-Allow-Origin.
func (s *Server) embedDeployment(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.findEmbedDeployment(c, ""); err != nil {
			return err
		}
		return next(c)
	}
}

// findEmbedDeployment is embedDeployment's work, for a request carrying visitorToken.
func (s *Server) findEmbedDeployment(c echo.Context, visitorToken string) error {
	req := c.Request()
	d, err := s.webchat.Deployment(req.Context(), c.Param("deploymentId"), visitorToken)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Add(echo.HeaderVary, echo.HeaderOrigin)
	origin := req.Header.Get(echo.HeaderOrigin)
	if err := s.webchat.CheckOrigin(d, origin); err != nil {
		return err
	}
	if origin != "" {
		h.Set(echo.HeaderAccessControlAllowOrigin, origin)
		h.Set(echo.HeaderAccessControlExposeHeaders, "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset")
	}
	c.SetRequest(req.WithContext(context.WithValue(req.Context(), embedDeploymentKey{}, d)))
	return nil
}

// deploymentOf is the deployment embedDeployment found.
func deploymentOf(ctx context.Context) store.WebchatDeployment {
	d, _ := ctx.Value(embedDeploymentKey{}).(store.WebchatDeployment)
	return d
}

// embedChatDeployment is embedDeployment for a message, whose body it reads first for the
// visitor token. The body is read as the widget's route always has: JSON whatever the
// Content-Type, and one invalid_json answer for any body that is not the object (the
// generated binder would answer with echo's own messages and refuse other content types),
// given only after the deployment's 404 and the origin's 403. The generated binder then
// reads the same value, re-encoded.
func (s *Server) embedChatDeployment(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		var body embedapi.EmbedChatJSONRequestBody
		invalid := json.NewDecoder(req.Body).Decode(&body) != nil
		token := ""
		if !invalid && body.VisitorToken != nil {
			token = *body.VisitorToken
		}
		if err := s.findEmbedDeployment(c, token); err != nil {
			return err
		}
		if invalid {
			return apierr.Invalid("body", "invalid_json", "The body must be a JSON object with a message.")
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		req = c.Request()
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		return next(c)
	}
}

// embedBudgets spends a message's budgets: the visitor's (their conversation when the token
// is good, their address otherwise) and the deployment's.
func (s *Server) embedBudgets(f embedapi.StrictHandlerFunc, op string) embedapi.StrictHandlerFunc {
	if op != "EmbedChat" {
		return f
	}
	return func(c echo.Context, request any) (any, error) {
		d := deploymentOf(c.Request().Context())
		token := ""
		if req, ok := request.(embedapi.EmbedChatRequestObject); ok && req.Body != nil && req.Body.VisitorToken != nil {
			token = *req.Body.VisitorToken
		}
		visitor := "ip:" + c.RealIP()
		if conv, _ := s.webchat.Visitor(d, token); conv != "" {
			visitor = "conv:" + conv
		}
		buckets := []budget{{"wcv:" + d.ID.String() + ":" + visitor, s.cfg.WebchatVisitorRPM}, {"wcd:" + d.ID.String(), s.cfg.WebchatDeploymentRPM}}
		res, err := s.spend(c.Request().Context(), buckets)
		if err != nil {
			return nil, err
		}
		setRateHeaders(c, res)
		if !res.Allowed {
			if s.limited != nil {
				s.limited("webchat")
			}
			return nil, &apierr.Error{Kind: apierr.KindRateLimited, Code: "rate_limit_exceeded",
				Message: "Too many messages: please wait a moment before sending another."}
		}
		return f(c, request)
	}
}

// embedAccept passes the Accept header on, as keepAccept does for /api: a message asks for
// its reply as a stream with it.
func embedAccept(f embedapi.StrictHandlerFunc, _ string) embedapi.StrictHandlerFunc {
	return func(c echo.Context, request any) (any, error) {
		req := c.Request()
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), acceptKey{}, req.Header.Get(echo.HeaderAccept))))
		return f(c, request)
	}
}

// EmbedConfig serves GET /embed/{deploymentId}/config, never cached: availability changes.
func (h *embedHandlers) EmbedConfig(ctx context.Context, _ embedapi.EmbedConfigRequestObject) (embedapi.EmbedConfigResponseObject, error) {
	b, err := h.s.webchat.Bootstrap(ctx, deploymentOf(ctx))
	if err != nil {
		return nil, err
	}
	return noStore{embedapi.EmbedConfig200JSONResponse{DisplayName: b.DisplayName, Greeting: b.Greeting, Disclosure: b.Disclosure,
		Language: b.Language, Available: b.Available, UnavailableReason: b.Unavailable, MaxMessageChars: b.MaxMessageChars}}, nil
}

type noStore struct {
	embedapi.EmbedConfig200JSONResponse
}

func (r noStore) VisitEmbedConfigResponse(w http.ResponseWriter) error {
	w.Header().Set(echo.HeaderCacheControl, "no-store")
	return r.EmbedConfig200JSONResponse.VisitEmbedConfigResponse(w)
}

func (h *embedHandlers) EmbedConfigPreflight(context.Context, embedapi.EmbedConfigPreflightRequestObject) (embedapi.EmbedConfigPreflightResponseObject, error) {
	return preflight{}, nil
}

func (h *embedHandlers) EmbedChatPreflight(context.Context, embedapi.EmbedChatPreflightRequestObject) (embedapi.EmbedChatPreflightResponseObject, error) {
	return preflight{}, nil
}

// preflight allows the widget's requests from an origin embedDeployment accepted, and lets
// the browser remember it for ten minutes.
type preflight struct{}

func (preflight) VisitEmbedConfigPreflightResponse(w http.ResponseWriter) error {
	return preflight{}.visit(w)
}
func (preflight) VisitEmbedChatPreflightResponse(w http.ResponseWriter) error {
	return preflight{}.visit(w)
}

func (preflight) visit(w http.ResponseWriter) error {
	h := w.Header()
	h.Set(echo.HeaderAccessControlAllowHeaders, "Content-Type, Accept")
	h.Set(echo.HeaderAccessControlMaxAge, "600")
	return embedapi.PreflightResponse{Headers: embedapi.PreflightResponseHeaders{AccessControlAllowMethods: "GET, POST, OPTIONS"}}.
		VisitEmbedChatPreflightResponse(w)
}

// EmbedChat serves POST /embed/{deploymentId}/chat: the same turn as
// POST /api/agents/{id}/chat, on the webchat channel, as JSON or as SSE frames.
func (h *embedHandlers) EmbedChat(ctx context.Context, req embedapi.EmbedChatRequestObject) (embedapi.EmbedChatResponseObject, error) {
	in := webchat.ChatInput{Message: req.Body.Message}
	if req.Body.VisitorToken != nil {
		in.VisitorToken = *req.Body.VisitorToken
	}
	if (req.Body.Stream != nil && *req.Body.Stream) || wantsStream(ctx) {
		return &embedChatStream{ctx: ctx, svc: h.s.webchat, d: deploymentOf(ctx), in: in}, nil
	}
	out, err := h.s.webchat.Chat(ctx, deploymentOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return embedapi.EmbedChat200JSONResponse{Body: replyBody(out)}, nil
}

// embedChatStream runs the turn while writing its frames: `conversation` (the visitor's
// token), `delta`..., then `done` or `error`. A refusal before the first frame is an
// ordinary error response.
type embedChatStream struct {
	ctx context.Context
	svc *webchat.Service
	d   store.WebchatDeployment
	in  webchat.ChatInput
}

func (s *embedChatStream) VisitEmbedChatResponse(w http.ResponseWriter) error {
	out := &sseWriter{w: w}
	s.in.OnToken = func(token string) error {
		return out.event("conversation", embedapi.ConversationFrame{VisitorToken: token})
	}
	s.in.OnDelta = func(text string) error {
		if text == "" {
			return nil
		}
		return out.event("delta", embedapi.DeltaFrame{Text: text})
	}
	reply, err := s.svc.Chat(s.ctx, s.d, s.in)
	if err != nil {
		if !out.started {
			return err
		}
		return out.event("error", errorFrame(err))
	}
	return out.event("done", replyBody(reply))
}

func replyBody(r webchat.Reply) embedapi.Reply {
	out := embedapi.Reply{VisitorToken: r.VisitorToken, Reply: r.Reply, Status: r.Status}
	if r.Escalation != nil {
		out.Escalation = &struct {
			Action  string `json:"action"`
			Trigger string `json:"trigger"`
		}{Action: r.Escalation.Action, Trigger: r.Escalation.Trigger}
	}
	return out
}
