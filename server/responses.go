package server

import (
	"context"
	"encoding/json"
	"net/http"

	"switchboard/gen/v1api"
	"switchboard/responses"
)

// CreateResponse runs one turn (POST /v1/responses): inline, streamed, or queued in the
// background; with an Idempotency-Key, at most once.
func (h *v1Handlers) CreateResponse(ctx context.Context, req v1api.CreateResponseRequestObject) (v1api.CreateResponseResponseObject, error) {
	in, err := h.createRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	if in.Stream {
		run, err := h.s.responses.Stream(ctx, in)
		if err != nil {
			return nil, err
		}
		return &responseStream{ctx: ctx, run: run}, nil
	}
	created, err := h.s.responses.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	switch {
	case created.Replay != nil:
		return storedResponse{body: created.Replay, replayed: true}, nil
	case created.Body != nil:
		return storedResponse{body: created.Body}, nil
	}
	return v1api.CreateResponse200JSONResponse{Body: created.Response}, nil
}

// createRequest translates the request object into the domain's input.
func (h *v1Handlers) createRequest(ctx context.Context, req v1api.CreateResponseRequestObject) (responses.CreateRequest, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	in := responses.CreateRequest{WorkspaceID: p.WorkspaceID, Role: p.Access(), KeyID: p.KeyID, Model: modelID(body.Model),
		Store: body.Store == nil || *body.Store, Background: isTrue(body.Background), Stream: isTrue(body.Stream), Body: body}
	if err := in.CheckOptions(); err != nil {
		return in, err
	}
	input, err := responsesInput(body.Input)
	if err != nil {
		return in, err
	}
	if body.Instructions != nil {
		input.Instructions = append(input.Instructions, *body.Instructions)
		in.Instructions = body.Instructions
	}
	in.Input = input
	if body.PreviousResponseId != nil {
		in.PreviousResponseID = *body.PreviousResponseId
	}
	if req.Params.IdempotencyKey != nil {
		in.IdempotencyKey = *req.Params.IdempotencyKey
	}
	return in, nil
}

// GetResponse returns a stored response (GET /v1/responses/{id}).
func (h *v1Handlers) GetResponse(ctx context.Context, req v1api.GetResponseRequestObject) (v1api.GetResponseResponseObject, error) {
	p, _ := principalFrom(ctx)
	body, err := h.s.responses.Get(ctx, p.WorkspaceID, req.Id)
	if err != nil {
		return nil, err
	}
	return storedResponse{body: body}, nil
}

// storedResponse answers a stored response body as it was stored, byte for byte. Decoding
// it into v1api.Response and encoding it again would reorder keys and drop whatever the
// struct does not know; the contract promises that a GET, or an idempotent replay, returns
// what the create answered. The body was encoded from a v1api.Response when it was stored.
type storedResponse struct {
	body     json.RawMessage
	replayed bool // mark an idempotent replay with `Idempotent-Replayed: true`, as other APIs do
}

func (s storedResponse) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	if s.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(s.body)
	return err
}

func (s storedResponse) VisitGetResponseResponse(w http.ResponseWriter) error    { return s.write(w) }
func (s storedResponse) VisitCreateResponseResponse(w http.ResponseWriter) error { return s.write(w) }

// responseStream runs the turn while writing the Responses event stream. A stream needs its
// own Visit: the generated text/event-stream response copies a finished io.Reader, while
// these events are written (and flushed) as the model produces the reply.
type responseStream struct {
	ctx context.Context
	run *responses.Run
	out *sseWriter
	seq int
}

// next is the sequence_number of the next event: its position in the stream, from 0.
func (s *responseStream) next() int {
	n := s.seq
	s.seq++
	return n
}

// open announces the response, its message and its content part, once, before the first
// delta (or the final text).
func (s *responseStream) open() error {
	if s.out.started {
		return nil
	}
	created := v1api.ResponseCreatedEvent{Type: v1api.ResponseCreated, SequenceNumber: s.next(),
		Response: s.run.Shell(v1api.InProgress)}
	if err := s.out.event(string(created.Type), created); err != nil {
		return err
	}
	msg := s.run.Message("in_progress", "")
	msg.Content = []v1api.OutputContent{}
	added := v1api.ResponseOutputItemAddedEvent{Type: v1api.ResponseOutputItemAdded, SequenceNumber: s.next(), Item: msg}
	if err := s.out.event(string(added.Type), added); err != nil {
		return err
	}
	part := v1api.ResponseContentPartAddedEvent{Type: v1api.ResponseContentPartAdded, SequenceNumber: s.next(),
		ItemId: s.run.MessageID, Part: responses.OutputText("")}
	return s.out.event(string(part.Type), part)
}

func (s *responseStream) VisitCreateResponseResponse(w http.ResponseWriter) error {
	s.out = &sseWriter{w: w}
	id := s.run.MessageID
	res, err := s.run.Execute(s.ctx, func(delta string) error {
		if err := s.open(); err != nil {
			return err
		}
		ev := v1api.ResponseTextDeltaEvent{Type: v1api.ResponseOutputTextDelta, SequenceNumber: s.next(),
			ItemId: id, Delta: delta, Logprobs: []map[string]any{}}
		return s.out.event(string(ev.Type), ev)
	})
	if err != nil {
		if !s.out.started {
			return err // nothing sent yet: an ordinary error response
		}
		env := streamError(err).Error
		ev := v1api.ResponseErrorEvent{Type: v1api.ResponseErrorEventTypeError, SequenceNumber: s.next(),
			Code: env.Code, Message: env.Message}
		return s.out.event(string(ev.Type), ev)
	}
	if err := s.open(); err != nil {
		return err
	}
	final := s.run.Completed(res)
	text := v1api.ResponseTextDoneEvent{Type: v1api.ResponseOutputTextDone, SequenceNumber: s.next(),
		ItemId: id, Text: res.Text, Logprobs: []map[string]any{}}
	if err := s.out.event(string(text.Type), text); err != nil {
		return err
	}
	part := v1api.ResponseContentPartDoneEvent{Type: v1api.ResponseContentPartDone, SequenceNumber: s.next(),
		ItemId: id, Part: responses.OutputText(res.Text)}
	if err := s.out.event(string(part.Type), part); err != nil {
		return err
	}
	item := v1api.ResponseOutputItemDoneEvent{Type: v1api.ResponseOutputItemDone, SequenceNumber: s.next(), Item: final.Output[0]}
	if err := s.out.event(string(item.Type), item); err != nil {
		return err
	}
	completed := v1api.ResponseCompletedEvent{Type: v1api.ResponseCompleted, SequenceNumber: s.next(), Response: final}
	return s.out.event(string(completed.Type), completed)
}

// modelID is the requested model; empty lets the domain pick the default.
func modelID(m *v1api.ModelId) string {
	if m == nil {
		return ""
	}
	return string(*m)
}

func isTrue(b *bool) bool { return b != nil && *b }
