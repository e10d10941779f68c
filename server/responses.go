package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/gen/v1api"
	"switchboard/shortid"
	"switchboard/store"
)

// responseObject is the Response object of the contract, in the shape the official OpenAI
// SDKs read. A stored response keeps exactly this JSON, so a GET returns what the create did.
type responseObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Model              string          `json:"model"`
	Output             []outputMessage `json:"output"`
	OutputText         string          `json:"output_text"`
	Usage              *responseUsage  `json:"usage,omitempty"`
	Error              *envelopeError  `json:"error"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Metadata           map[string]any  `json:"metadata"`
	Background         bool            `json:"background"`
	Conversation       string          `json:"x_svc_conversation,omitempty"`
}

type outputMessage struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type responseUsage struct {
	InputTokens         int64          `json:"input_tokens"`
	OutputTokens        int64          `json:"output_tokens"`
	TotalTokens         int64          `json:"total_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
}

// pendingResponse is a response whose turn is about to run: its identity is fixed first, so
// the stream can announce it before the model answers.
type pendingResponse struct {
	id, messageID string
	workspace     uuid.UUID
	created       time.Time
	model         string
	previous      *string
	stored        bool
	background    bool
}

func (p pendingResponse) shell(status string) responseObject {
	return responseObject{ID: p.id, Object: "response", CreatedAt: p.created.Unix(), Status: status, Model: p.model,
		Output: []outputMessage{}, PreviousResponseID: p.previous, Metadata: map[string]any{}, Background: p.background}
}

func (p pendingResponse) message(status, text string) outputMessage {
	return outputMessage{Type: "message", ID: p.messageID, Status: status, Role: "assistant",
		Content: []outputText{{Type: "output_text", Text: text, Annotations: []any{}}}}
}

func (p pendingResponse) completed(out *agent.Outcome) responseObject {
	r := p.shell("completed")
	r.Output = []outputMessage{p.message("completed", out.Text)}
	r.OutputText = out.Text
	r.Usage = &responseUsage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
		TotalTokens:        out.Usage.InputTokens + out.Usage.OutputTokens,
		InputTokensDetails: map[string]int{"cached_tokens": 0}, OutputTokensDetails: map[string]int{"reasoning_tokens": 0}}
	if p.stored && out.Conversation != nil {
		r.Conversation = out.Conversation.ShortID
	}
	return r
}

// CreateResponse runs one turn (POST /v1/responses): inline, streamed, or queued in the
// background; with an Idempotency-Key, at most once.
func (h *v1Handlers) CreateResponse(ctx context.Context, req v1api.CreateResponseRequestObject) (v1api.CreateResponseResponseObject, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	stored := body.Store == nil || *body.Store
	background, stream := isTrue(body.Background), isTrue(body.Stream)
	switch {
	case background && !stored:
		return nil, apierr.Invalid("background", "background_requires_store", "`background: true` cannot be combined with `store: false`: a background response must be stored to be fetched.")
	case background && stream:
		return nil, apierr.Invalid("stream", "unsupported_combination", "`background: true` cannot be combined with `stream: true`: poll GET /v1/responses/{id} or follow GET /v1/events instead.")
	}
	in, err := responsesInput(body.Input)
	if err != nil {
		return nil, err
	}
	if body.Instructions != nil {
		in.instructions = append(in.instructions, *body.Instructions)
	}
	pending := pendingResponse{id: shortid.New(shortid.Response), messageID: shortid.New(shortid.Message),
		created: time.Now(), model: modelOrDefault(body.Model), stored: stored, background: background, workspace: p.WorkspaceID}
	turn := agent.Turn{WorkspaceID: p.WorkspaceID, Model: pending.model, Surface: "responses",
		Instructions: in.instructions, Seed: in.seed, Text: in.text, Persist: stored}
	if prev := body.PreviousResponseId; prev != nil && *prev != "" {
		conv, err := h.previousConversation(ctx, p.WorkspaceID, *prev)
		if err != nil {
			return nil, err
		}
		turn.Conversation, pending.previous = &conv, prev
	}
	if background {
		return h.enqueue(ctx, pending, turn)
	}
	if stored {
		turn.Record = pending.record
	}
	if stream {
		return &responseStream{ctx: ctx, turns: h.s.turns, turn: turn, pending: pending}, nil
	}
	if stored && req.Params.IdempotencyKey != nil {
		return h.idempotent(ctx, *req.Params.IdempotencyKey, body, pending, turn)
	}
	out, err := h.s.turns.Run(ctx, turn)
	if err != nil {
		return nil, err
	}
	return jsonBody{status: http.StatusOK, body: pending.completed(out)}, nil
}

// record stores the finished response in the turn's transaction.
func (p pendingResponse) record(ctx context.Context, tx *store.Tx, out *agent.Outcome) ([]store.NewEvent, error) {
	raw, err := json.Marshal(p.completed(out))
	if err != nil {
		return nil, err
	}
	return nil, tx.InsertResponse(ctx, p.workspace, store.StoredResponse{ShortID: p.id,
		ConversationID: &out.Conversation.ID, Status: "completed", Model: p.model, Body: raw})
}

// previousConversation resolves previous_response_id to its conversation, in the caller's
// workspace only.
func (h *v1Handlers) previousConversation(ctx context.Context, workspaceID uuid.UUID, id string) (store.Conversation, error) {
	notFound := apierr.NotFound("previous_response_id", "response_not_found", "No stored response %q in this workspace (responses created with `store: false` cannot be continued).", id)
	r, err := h.s.store.ResponseByShortID(ctx, workspaceID, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, notFound
	}
	if err != nil {
		return store.Conversation{}, err
	}
	if r.ConversationID == nil {
		return store.Conversation{}, apierr.Conflict("response_not_finished", "The response %q has not finished yet; continue it once GET /v1/responses/%s shows it completed.", id, id)
	}
	conv, err := h.s.store.ConversationByRef(ctx, workspaceID, r.ConversationID.String())
	if errors.Is(err, store.ErrNotFound) {
		return store.Conversation{}, notFound
	}
	return conv, err
}

// GetResponse returns a stored response (GET /v1/responses/{id}).
func (h *v1Handlers) GetResponse(ctx context.Context, req v1api.GetResponseRequestObject) (v1api.GetResponseResponseObject, error) {
	p, _ := principalFrom(ctx)
	r, err := h.s.store.ResponseByShortID(ctx, p.WorkspaceID, req.Id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("id", "response_not_found", "No stored response %q in this workspace.", req.Id)
	}
	if err != nil {
		return nil, err
	}
	return rawJSON{status: http.StatusOK, body: r.Body}, nil
}

// responseStream runs the turn while writing the Responses event stream.
type responseStream struct {
	ctx     context.Context
	turns   *agent.Pipeline
	turn    agent.Turn
	pending pendingResponse
}

func (s *responseStream) VisitCreateResponseResponse(w http.ResponseWriter) error {
	out := &sseWriter{w: w}
	seq := 0
	send := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		return out.event(typ, fields)
	}
	p := s.pending
	part := func(text string) map[string]any {
		return map[string]any{"item_id": p.messageID, "output_index": 0, "content_index": 0,
			"part": outputText{Type: "output_text", Text: text, Annotations: []any{}}}
	}
	opened := false
	open := func() error {
		if opened {
			return nil
		}
		opened = true
		if err := send("response.created", map[string]any{"response": p.shell("in_progress")}); err != nil {
			return err
		}
		msg := p.message("in_progress", "")
		msg.Content = []outputText{}
		if err := send("response.output_item.added", map[string]any{"output_index": 0, "item": msg}); err != nil {
			return err
		}
		return send("response.content_part.added", part(""))
	}
	s.turn.OnDelta = func(delta string) error {
		if err := open(); err != nil {
			return err
		}
		return send("response.output_text.delta", map[string]any{"item_id": p.messageID, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []any{}})
	}
	res, err := s.turns.Run(s.ctx, s.turn)
	if err != nil {
		if !out.started {
			return err // nothing sent yet: an ordinary error response
		}
		e := apierr.As(err)
		if e == nil {
			e = apierr.Internal(err)
		}
		return send("error", map[string]any{"code": e.Code, "message": e.Message, "param": nil})
	}
	if err := open(); err != nil {
		return err
	}
	final := p.completed(res)
	steps := []struct {
		typ    string
		fields map[string]any
	}{
		{"response.output_text.done", map[string]any{"item_id": p.messageID, "output_index": 0, "content_index": 0, "text": res.Text, "logprobs": []any{}}},
		{"response.content_part.done", part(res.Text)},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": final.Output[0]}},
		{"response.completed", map[string]any{"response": final}},
	}
	for _, st := range steps {
		if err := send(st.typ, st.fields); err != nil {
			return err
		}
	}
	return nil
}

// jsonBody is a JSON response of any operation.
type jsonBody struct {
	status int
	body   any
}

func (j jsonBody) write(w http.ResponseWriter) error {
	raw, err := json.Marshal(j.body)
	if err != nil {
		return err
	}
	return rawJSON{status: j.status, body: raw}.write(w)
}

func (j jsonBody) VisitCreateResponseResponse(w http.ResponseWriter) error       { return j.write(w) }
func (j jsonBody) VisitCreateChatCompletionResponse(w http.ResponseWriter) error { return j.write(w) }

// rawJSON is a JSON response whose body is already encoded.
type rawJSON struct {
	status int
	body   []byte
}

func (r rawJSON) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	_, err := w.Write(r.body)
	return err
}

func (r rawJSON) VisitGetResponseResponse(w http.ResponseWriter) error    { return r.write(w) }
func (r rawJSON) VisitCreateResponseResponse(w http.ResponseWriter) error { return r.write(w) }

func modelOrDefault(m *v1api.ModelId) string {
	if m == nil || *m == "" {
		return catalog.DefaultModel
	}
	return string(*m)
}

func isTrue(b *bool) bool { return b != nil && *b }
