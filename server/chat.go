package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/gen/v1api"
	"switchboard/llm"
	"switchboard/shortid"
	"switchboard/store"
)

type chatCompletion struct {
	ID           string       `json:"id"`
	Object       string       `json:"object"`
	Created      int64        `json:"created"`
	Model        string       `json:"model"`
	Choices      []chatChoice `json:"choices"`
	Usage        *chatUsage   `json:"usage,omitempty"`
	Conversation string       `json:"x_svc_conversation,omitempty"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      *chatMessage `json:"message,omitempty"`
	Delta        *chatDelta   `json:"delta,omitempty"`
	Logprobs     any          `json:"logprobs"`
	FinishReason *string      `json:"finish_reason"`
}

type chatMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// chatCall is one chat completion in progress: its identity is fixed before the turn runs.
type chatCall struct {
	id           string
	created      time.Time
	model        string
	conversation string // the `mc-` id on stateful turns
}

func finishReason(f llm.FinishReason) *string {
	s := string(f)
	if s == "" {
		s = string(llm.FinishStop)
	}
	return &s
}

func usageOf(out *agent.Outcome) *chatUsage {
	return &chatUsage{PromptTokens: out.Usage.InputTokens, CompletionTokens: out.Usage.OutputTokens,
		TotalTokens: out.Usage.InputTokens + out.Usage.OutputTokens}
}

func (c chatCall) completion(out *agent.Outcome) chatCompletion {
	text := out.Text
	return chatCompletion{ID: c.id, Object: "chat.completion", Created: c.created.Unix(), Model: c.model,
		Choices: []chatChoice{{Index: 0, Message: &chatMessage{Role: "assistant", Content: &text}, FinishReason: finishReason(out.Finish)}},
		Usage:   usageOf(out), Conversation: c.conversation}
}

func (c chatCall) chunk(choices []chatChoice) chatCompletion {
	return chatCompletion{ID: c.id, Object: "chat.completion.chunk", Created: c.created.Unix(), Model: c.model,
		Choices: choices, Conversation: c.conversation}
}

// CreateChatCompletion runs one turn in the chat-completion shape. With `conversation` the
// server owns the history and only the last user message is read; without it, the whole
// `messages` array seeds an ephemeral turn that stores nothing but its spend.
func (h *v1Handlers) CreateChatCompletion(ctx context.Context, req v1api.CreateChatCompletionRequestObject) (v1api.CreateChatCompletionResponseObject, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	in, err := chatInput(body.Messages)
	if err != nil {
		return nil, err
	}
	call := chatCall{id: shortid.New(shortid.ChatCompl), created: time.Now(), model: modelOrDefault(body.Model)}
	turn := agent.Turn{WorkspaceID: p.WorkspaceID, Model: call.model, Surface: "chat.completions",
		Instructions: in.instructions, Text: in.text}
	if ref := body.Conversation; ref != nil {
		conv, err := h.s.store.ConversationByRef(ctx, p.WorkspaceID, *ref)
		if errors.Is(err, store.ErrNotFound) {
			return nil, apierr.NotFound("conversation", "conversation_not_found", "No conversation %q in this workspace.", *ref)
		}
		if err != nil {
			return nil, err
		}
		turn.Conversation, turn.Persist, call.conversation = &conv, true, conv.ShortID
	} else {
		turn.Seed = in.seed
	}
	if isTrue(body.Stream) {
		includeUsage := body.StreamOptions != nil && isTrue(body.StreamOptions.IncludeUsage)
		return &chatStream{ctx: ctx, turns: h.s.turns, turn: turn, call: call, includeUsage: includeUsage}, nil
	}
	out, err := h.s.turns.Run(ctx, turn)
	if err != nil {
		return nil, err
	}
	return jsonBody{status: http.StatusOK, body: call.completion(out)}, nil
}

// chatStream runs the turn while writing `chat.completion.chunk` frames: the role in the
// first delta, the content deltas as they arrive, then a chunk with an empty delta and the
// finish_reason (as the reference API does), the usage chunk when asked, and `[DONE]`.
type chatStream struct {
	ctx          context.Context
	turns        *agent.Pipeline
	turn         agent.Turn
	call         chatCall
	includeUsage bool
}

func (s *chatStream) VisitCreateChatCompletionResponse(w http.ResponseWriter) error {
	out := &sseWriter{w: w}
	empty := ""
	opened := false
	open := func() error {
		if opened {
			return nil
		}
		opened = true
		return out.event("", s.call.chunk([]chatChoice{{Delta: &chatDelta{Role: "assistant", Content: &empty}}}))
	}
	s.turn.OnDelta = func(delta string) error {
		if err := open(); err != nil {
			return err
		}
		return out.event("", s.call.chunk([]chatChoice{{Delta: &chatDelta{Content: &delta}}}))
	}
	res, err := s.turns.Run(s.ctx, s.turn)
	if err != nil {
		if !out.started {
			return err
		}
		e := apierr.As(err)
		if e == nil {
			e = apierr.Internal(err)
		}
		return out.event("", map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type(), "param": nil, "code": e.Code}})
	}
	if err := open(); err != nil {
		return err
	}
	if err := out.event("", s.call.chunk([]chatChoice{{Delta: &chatDelta{}, FinishReason: finishReason(res.Finish)}})); err != nil {
		return err
	}
	if s.includeUsage {
		last := s.call.chunk([]chatChoice{})
		last.Usage = usageOf(res)
		if err := out.event("", last); err != nil {
			return err
		}
	}
	return out.raw("", []byte("[DONE]"))
}
