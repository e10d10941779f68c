package server

import (
	"context"
	"encoding/json"
	"net/http"

	"switchboard/apierr"
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
	if created.Replay != nil {
		return storedResponse{body: created.Replay, replayed: true}, nil
	}
	return v1api.CreateResponse200JSONResponse{Body: created.Response}, nil
}

// createRequest translates the request object into the domain's input.
func (h *v1Handlers) createRequest(ctx context.Context, req v1api.CreateResponseRequestObject) (responses.CreateRequest, error) {
	p, _ := principalFrom(ctx)
	body := req.Body
	in := responses.CreateRequest{WorkspaceID: p.WorkspaceID, Model: modelID(body.Model),
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

func (s *responseStream) send(typ string, fields map[string]any) error {
	fields["type"], fields["sequence_number"] = typ, s.seq
	s.seq++
	return s.out.event(typ, fields)
}

func (s *responseStream) part(text string) map[string]any {
	return map[string]any{"item_id": s.run.MessageID, "output_index": 0, "content_index": 0, "part": responses.OutputText(text)}
}

// open announces the response, its message and its content part, once, before the first
// delta (or the final text).
func (s *responseStream) open() error {
	if s.out.started {
		return nil
	}
	if err := s.send("response.created", map[string]any{"response": s.run.Shell(v1api.InProgress)}); err != nil {
		return err
	}
	msg := s.run.Message("in_progress", "")
	msg.Content = []v1api.OutputContent{}
	if err := s.send("response.output_item.added", map[string]any{"output_index": 0, "item": msg}); err != nil {
		return err
	}
	return s.send("response.content_part.added", s.part(""))
}

func (s *responseStream) VisitCreateResponseResponse(w http.ResponseWriter) error {
	s.out = &sseWriter{w: w}
	id := s.run.MessageID
	res, err := s.run.Execute(s.ctx, func(delta string) error {
		if err := s.open(); err != nil {
			return err
		}
		return s.send("response.output_text.delta", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []any{}})
	})
	if err != nil {
		if !s.out.started {
			return err // nothing sent yet: an ordinary error response
		}
		e := apierr.As(err)
		if e == nil {
			e = apierr.Internal(err)
		}
		return s.send("error", map[string]any{"code": e.Code, "message": e.Message, "param": nil})
	}
	if err := s.open(); err != nil {
		return err
	}
	final := s.run.Completed(res)
	steps := []struct {
		typ    string
		fields map[string]any
	}{
		{"response.output_text.done", map[string]any{"item_id": id, "output_index": 0, "content_index": 0, "text": res.Text, "logprobs": []any{}}},
		{"response.content_part.done", s.part(res.Text)},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": final.Output[0]}},
		{"response.completed", map[string]any{"response": final}},
	}
	for _, st := range steps {
		if err := s.send(st.typ, st.fields); err != nil {
			return err
		}
	}
	return nil
}

// modelID is the requested model; empty lets the domain pick the default.
func modelID(m *v1api.ModelId) string {
	if m == nil {
		return ""
	}
	return string(*m)
}

func isTrue(b *bool) bool { return b != nil && *b }
