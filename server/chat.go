package server

import (
	"context"
	"net/http"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
	"switchboard/responses"
	"switchboard/store"
)

// CreateChatCompletion runs one turn in the chat-completion shape (POST /v1/chat/completions).
func (h *v1Handlers) CreateChatCompletion(ctx context.Context, req v1api.CreateChatCompletionRequestObject) (v1api.CreateChatCompletionResponseObject, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	in, err := chatInput(body.Messages)
	if err != nil {
		return nil, err
	}
	run, err := h.s.responses.Chat(ctx, responses.ChatRequest{WorkspaceID: p.WorkspaceID, Role: p.Access(), KeyID: p.KeyID, Model: modelID(body.Model),
		Input: in, Conversation: body.Conversation})
	if err != nil {
		return nil, err
	}
	if isTrue(body.Stream) {
		includeUsage := body.StreamOptions != nil && isTrue(body.StreamOptions.IncludeUsage)
		return &chatStream{ctx: ctx, run: run, includeUsage: includeUsage}, nil
	}
	out, err := run.Execute(ctx, nil)
	if err != nil {
		return nil, err
	}
	return v1api.CreateChatCompletion200JSONResponse{Body: chatCompletion(run, out)}, nil
}

func chatCompletion(run *responses.ChatRun, out *agent.Outcome) v1api.ChatCompletion {
	text := out.Text
	finish := v1api.ChatCompletionChoiceFinishReason(finishReason(out.Finish))
	return v1api.ChatCompletion{Id: run.ID, Object: "chat.completion", Created: run.Created.Unix(), Model: run.Model,
		Choices: []v1api.ChatCompletionChoice{{Index: 0, FinishReason: &finish,
			Message: v1api.ChatCompletionMessage{Role: "assistant", Content: &text}}},
		Usage: chatUsage(out), XSvcConversation: run.Conversation}
}

func chatUsage(out *agent.Outcome) *v1api.ChatCompletionUsage {
	return &v1api.ChatCompletionUsage{PromptTokens: out.Usage.InputTokens, CompletionTokens: out.Usage.OutputTokens,
		TotalTokens: out.Usage.InputTokens + out.Usage.OutputTokens}
}

func finishReason(f llm.FinishReason) string {
	if f == "" {
		return string(llm.FinishStop)
	}
	return string(f)
}

// chatStream runs the turn while writing `chat.completion.chunk` frames: the role in the
// first delta, the content deltas as they arrive, then a chunk with an empty delta and the
// finish_reason (as the reference API does), the usage chunk when asked, and `[DONE]`. Like
// every stream it has its own Visit: the frames are flushed as the model produces them.
type chatStream struct {
	ctx          context.Context
	run          *responses.ChatRun
	includeUsage bool
	out          *sseWriter
}

func (s *chatStream) chunk(choices ...v1api.ChatCompletionChunkChoice) v1api.ChatCompletionChunk {
	return v1api.ChatCompletionChunk{Id: s.run.ID, Object: v1api.ChatCompletionChunkObjectChatCompletionChunk,
		Created: s.run.Created.Unix(), Model: s.run.Model, Choices: append([]v1api.ChatCompletionChunkChoice{}, choices...),
		XSvcConversation: s.run.Conversation}
}

// open sends the role, once, before the first content.
func (s *chatStream) open() error {
	if s.out.started {
		return nil
	}
	empty := ""
	return s.out.event("", s.chunk(v1api.ChatCompletionChunkChoice{
		Delta: v1api.ChatCompletionChunkDelta{Role: v1api.ChatCompletionChunkDeltaRoleAssistant, Content: &empty}}))
}

func (s *chatStream) VisitCreateChatCompletionResponse(w http.ResponseWriter) error {
	s.out = &sseWriter{w: w}
	res, err := s.run.Execute(s.ctx, func(delta string) error {
		if err := s.open(); err != nil {
			return err
		}
		return s.out.event("", s.chunk(v1api.ChatCompletionChunkChoice{Delta: v1api.ChatCompletionChunkDelta{Content: &delta}}))
	})
	if err != nil {
		if !s.out.started {
			return err
		}
		return s.out.event("", streamError(err))
	}
	if err := s.open(); err != nil {
		return err
	}
	finish := v1api.ChatCompletionChoiceFinishReason(finishReason(res.Finish))
	if err := s.out.event("", s.chunk(v1api.ChatCompletionChunkChoice{FinishReason: &finish})); err != nil {
		return err
	}
	if s.includeUsage {
		last := s.chunk()
		last.Usage = chatUsage(res)
		if err := s.out.event("", last); err != nil {
			return err
		}
	}
	return s.out.raw("", []byte("[DONE]"))
}

// streamError is the error that ends a stream which already began: the error envelope
// without hint and docs_url, its param null and its code a string (empty when the error has
// none), as the stream frames always had it. A chat stream sends it as is; a Responses
// stream sends its fields in an `error` event.
func streamError(err error) v1api.ErrorResponse {
	e := store.Unavailability(err)
	if e == nil {
		e = apierr.As(err)
	}
	if e == nil {
		e = apierr.Internal(err)
	}
	return v1api.ErrorResponse{Error: v1api.Error{Message: e.Message, Type: e.Type(), Code: &e.Code}}
}
