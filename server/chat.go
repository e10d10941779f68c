package server

import (
	"context"
	"net/http"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
	"switchboard/responses"
)

// CreateChatCompletion runs one turn in the chat-completion shape (POST /v1/chat/completions).
func (h *v1Handlers) CreateChatCompletion(ctx context.Context, req v1api.CreateChatCompletionRequestObject) (v1api.CreateChatCompletionResponseObject, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	in, err := chatInput(body.Messages)
	if err != nil {
		return nil, err
	}
	run, err := h.s.responses.Chat(ctx, responses.ChatRequest{WorkspaceID: p.WorkspaceID, Model: modelID(body.Model),
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

// chatChunk is a `chat.completion.chunk` frame of a stream. The contract describes the
// stream as text (frames of this JSON), so no generated type exists for it; its usage is
// the generated one.
type chatChunk struct {
	ID           string                     `json:"id"`
	Object       string                     `json:"object"`
	Created      int64                      `json:"created"`
	Model        string                     `json:"model"`
	Choices      []chunkChoice              `json:"choices"`
	Usage        *v1api.ChatCompletionUsage `json:"usage,omitempty"`
	Conversation string                     `json:"x_svc_conversation,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	Logprobs     any        `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type chunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
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

func (s *chatStream) chunk(choices ...chunkChoice) chatChunk {
	return chatChunk{ID: s.run.ID, Object: "chat.completion.chunk", Created: s.run.Created.Unix(), Model: s.run.Model,
		Choices: append([]chunkChoice{}, choices...), Conversation: s.run.Conversation}
}

// open sends the role, once, before the first content.
func (s *chatStream) open() error {
	if s.out.started {
		return nil
	}
	empty := ""
	return s.out.event("", s.chunk(chunkChoice{Delta: chunkDelta{Role: "assistant", Content: &empty}}))
}

func (s *chatStream) VisitCreateChatCompletionResponse(w http.ResponseWriter) error {
	s.out = &sseWriter{w: w}
	res, err := s.run.Execute(s.ctx, func(delta string) error {
		if err := s.open(); err != nil {
			return err
		}
		return s.out.event("", s.chunk(chunkChoice{Delta: chunkDelta{Content: &delta}}))
	})
	if err != nil {
		if !s.out.started {
			return err
		}
		e := apierr.As(err)
		if e == nil {
			e = apierr.Internal(err)
		}
		return s.out.event("", map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type(), "param": nil, "code": e.Code}})
	}
	if err := s.open(); err != nil {
		return err
	}
	finish := finishReason(res.Finish)
	if err := s.out.event("", s.chunk(chunkChoice{FinishReason: &finish})); err != nil {
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
