package server

import (
	"context"
	"net/http"
	"time"

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
	if isTrue(body.Stream) || wantsStream(ctx) {
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

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
