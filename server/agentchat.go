package server

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/converse"
	"switchboard/gen/apiapi"
	"switchboard/store"
)

type acceptKey struct{}

// apiStrictMiddlewares run around the strict /api handlers, with the echo context at hand.
var apiStrictMiddlewares = []apiapi.StrictMiddlewareFunc{keepAccept}

// keepAccept passes the Accept header on to the handlers (the two chats answer with a stream
// when it asks for one). OpenAPI does not let a document declare Accept as a parameter.
func keepAccept(f apiapi.StrictHandlerFunc, _ string) apiapi.StrictHandlerFunc {
	return func(c echo.Context, request any) (any, error) {
		req := c.Request()
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), acceptKey{}, req.Header.Get(echo.HeaderAccept))))
		return f(c, request)
	}
}

// wantsStream reports whether an Accept header asks for text/event-stream.
func wantsStream(ctx context.Context) bool {
	accept, _ := ctx.Value(acceptKey{}).(string)
	for _, part := range strings.Split(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// AgentChat answers a message to a deployed agent (POST /api/agents/{id}/chat).
func (h *apiHandlers) AgentChat(ctx context.Context, req apiapi.AgentChatRequestObject) (apiapi.AgentChatResponseObject, error) {
	if h.s.agents == nil {
		return nil, apierr.Internal(errors.New("server: the agent runtime is not wired"))
	}
	body := req.Body
	in := converse.Request{WorkspaceID: workspaceOf(ctx), AgentID: req.Id, Message: body.Message, Contact: body.Contact}
	if body.ConversationId != nil {
		in.ConversationID = *body.ConversationId
	}
	if (body.Stream != nil && *body.Stream) || wantsStream(ctx) {
		return &agentChatStream{ctx: ctx, svc: h.s.agents, in: in, log: h.s.log}, nil
	}
	out, err := h.s.agents.Chat(ctx, in)
	if err != nil {
		return nil, restParam(err)
	}
	return apiapi.AgentChat200JSONResponse(*out), nil
}

// agentChatStream runs the turn while writing its frames: `conversation`, `delta`..., then
// `done` or `error`. A failure before the first frame is an ordinary error response.
type agentChatStream struct {
	ctx context.Context
	svc *converse.Service
	in  converse.Request
	log *slog.Logger
}

func (s *agentChatStream) VisitAgentChatResponse(w http.ResponseWriter) error {
	out := &sseWriter{w: w}
	s.in.OnConversation = func(id string) error {
		return out.event("conversation", map[string]string{"conversation_id": id})
	}
	s.in.OnDelta = func(text string) error {
		if text == "" {
			return nil
		}
		return out.event("delta", map[string]string{"text": text})
	}
	answer, err := s.svc.Chat(s.ctx, s.in)
	if err != nil {
		err = restParam(err)
		if !out.started {
			return err
		}
		if e := apierr.As(err); e == nil || e.Kind == apierr.KindInternal {
			s.log.ErrorContext(s.ctx, "agent chat stream failed", slog.String("error", err.Error()))
		}
		return out.event("error", errorFrame(err))
	}
	return out.event("done", answer)
}

// errorFrame is the error envelope of a stream's `error` frame (no hint or docs_url).
func errorFrame(err error) apiErrorEnvelope {
	e := store.Unavailability(err)
	if e == nil {
		e = apierr.As(err)
	}
	if e == nil {
		e = apierr.Internal(err)
	}
	env := apiErrorEnvelope{}
	env.Error.Message, env.Error.Type = e.Message, e.Type()
	if e.Param != "" {
		env.Error.Param = &e.Param
	}
	if e.Code != "" {
		env.Error.Code = &e.Code
	}
	return env
}

type apiErrorEnvelope struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}
