package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"switchboard/agent"
	"switchboard/gen/apiapi"
	"switchboard/responses"
)

// Chat runs one turn of the builder assistant (POST /api/chat): the /v1 pipeline on the
// platform routes, answered as JSON or as a stream of conversation, delta and done events.
func (h *apiHandlers) Chat(ctx context.Context, req apiapi.ChatRequestObject) (apiapi.ChatResponseObject, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	run, err := h.s.responses.Assistant(ctx, responses.AssistantRequest{WorkspaceID: p.WorkspaceID, Role: p.Access(),
		KeyID: p.KeyID, Model: deref(body.Model), Message: body.Message, Conversation: body.ConversationId})
	if err != nil {
		return nil, err
	}
	if isTrue(body.Stream) || wantsEventStream(ctx) {
		return &assistantStream{ctx: ctx, run: run}, nil
	}
	out, err := run.Execute(ctx, nil)
	if err != nil {
		return nil, err
	}
	return apiapi.Chat200JSONResponse(chatReply(run, out)), nil
}

func chatReply(run *responses.AssistantRun, out *agent.Outcome) apiapi.ChatReply {
	reply := apiapi.ChatReply{ConversationId: run.Conversation, Reply: out.Text, Model: run.Model,
		PendingActions: []apiapi.PendingAction{}}
	reply.Usage.InputTokens, reply.Usage.OutputTokens = out.Usage.InputTokens, out.Usage.OutputTokens
	reply.Usage.TotalTokens = out.Usage.InputTokens + out.Usage.OutputTokens
	for _, a := range out.Parked {
		reply.PendingActions = append(reply.PendingActions, apiapi.PendingAction{ActionId: a.ShortID, Code: a.Code,
			Summary: a.Summary, ExpiresAt: a.ExpiresAt.UTC().Truncate(time.Second)})
	}
	return reply
}

// assistantStream writes the turn as server-sent events: `conversation` first, a `delta`
// per piece of the reply, then `done` with the whole answer, or `error`. A failure before
// the first frame is an ordinary error response.
type assistantStream struct {
	ctx context.Context
	run *responses.AssistantRun
}

func (s *assistantStream) VisitChatResponse(w http.ResponseWriter) error {
	out := &sseWriter{w: w}
	open := func() error {
		if out.started {
			return nil
		}
		return out.event("conversation", apiapi.ChatConversationEvent{ConversationId: s.run.Conversation})
	}
	res, err := s.run.Execute(s.ctx, func(delta string) error {
		if err := open(); err != nil {
			return err
		}
		return out.event("delta", apiapi.ChatDeltaEvent{Text: delta})
	})
	if err != nil {
		if !out.started {
			return err
		}
		return out.event("error", streamError(err))
	}
	if err := open(); err != nil {
		return err
	}
	return out.event("done", chatReply(s.run, res))
}

type acceptKey struct{}

// rememberAccept keeps whether the client asked for an event stream (`Accept:
// text/event-stream`), which the generated request objects do not carry.
func rememberAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if strings.Contains(c.Request().Header.Get("Accept"), "text/event-stream") {
			req := c.Request()
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), acceptKey{}, true)))
		}
		return next(c)
	}
}

func wantsEventStream(ctx context.Context) bool {
	v, _ := ctx.Value(acceptKey{}).(bool)
	return v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
