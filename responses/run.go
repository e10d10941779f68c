package responses

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"switchboard/agent"
	"switchboard/gen/v1api"
	"switchboard/store"
)

// Run is a response whose turn is about to run: its identity is fixed first, so a stream
// can announce it before the model answers.
type Run struct {
	ID, MessageID string
	WorkspaceID   uuid.UUID
	Created       time.Time
	Model         string
	Previous      *string
	Background    bool
	// Instructions is the request's `instructions` as sent, echoed on the response object.
	Instructions *string

	stored bool
	turn   agent.Turn
	turns  *agent.Pipeline
	// body is the response as insert encoded and stored it: the create answers these bytes,
	// so that it answers exactly what a GET will, without encoding the response twice.
	body json.RawMessage
}

// Execute runs the turn; onDelta (optional) receives the reply text as it is produced. A
// stored response is recorded in the turn's transaction.
func (r *Run) Execute(ctx context.Context, onDelta func(string) error) (*agent.Outcome, error) {
	t := r.turn
	t.OnDelta = onDelta
	return r.turns.Run(ctx, t)
}

// Shell is the response object before its output exists. It carries every field the
// reference API always returns, with the values this service actually uses (see the
// Response schema in openapi/v1.yaml).
func (r *Run) Shell(status v1api.ResponseStatus) v1api.Response {
	one := float32(1)
	return v1api.Response{Id: r.ID, Object: v1api.ResponseObjectResponse, CreatedAt: r.Created.Unix(), Status: status,
		Model: r.Model, Output: []v1api.OutputItem{}, PreviousResponseId: r.Previous, Metadata: map[string]any{},
		Background: r.Background, Instructions: r.Instructions, Tools: []map[string]any{}, ToolChoice: "auto",
		ParallelToolCalls: true, Temperature: &one, TopP: &one}
}

// Message is the assistant message of the output, with its text so far.
func (r *Run) Message(status, text string) v1api.OutputItem {
	return v1api.OutputItem{Type: "message", Id: r.MessageID, Status: status, Role: "assistant",
		Content: []v1api.OutputContent{OutputText(text)}}
}

// OutputText is an `output_text` content part.
func OutputText(text string) v1api.OutputContent {
	return v1api.OutputContent{Type: "output_text", Text: text, Annotations: []map[string]any{}, Logprobs: []map[string]any{}}
}

// Completed is the final response object of a finished turn.
func (r *Run) Completed(out *agent.Outcome) v1api.Response {
	resp := r.Shell(v1api.Completed)
	resp.Output = []v1api.OutputItem{r.Message("completed", out.Text)}
	resp.OutputText = out.Text
	resp.Usage = &v1api.ResponseUsage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
		TotalTokens: out.Usage.InputTokens + out.Usage.OutputTokens}
	if r.stored && out.Conversation != nil {
		resp.XSvcConversation = out.Conversation.ShortID
	}
	return resp
}

// created is what a create that ran its turn answers.
func (r *Run) created(out *agent.Outcome) Created {
	return Created{Response: r.Completed(out), Body: r.body}
}

// insert records a stored inline response (and completes its Idempotency-Key, if any) in
// the turn's transaction.
func (r *Run) insert(idempotencyKey string) func(*agent.Outcome) (store.TurnRecord, error) {
	return func(out *agent.Outcome) (store.TurnRecord, error) {
		raw, err := json.Marshal(r.Completed(out))
		r.body = raw
		return store.TurnRecord{IdempotencyKey: idempotencyKey, Response: store.StoredResponse{ShortID: r.ID,
			ConversationID: &out.Conversation.ID, Status: "completed", Model: r.Model, Body: raw}}, err
	}
}

// finish completes a background response in the turn's transaction and announces it; the
// turn rolls back if the response already finished (store.Tx.FinishResponse).
func (r *Run) finish(out *agent.Outcome) (store.TurnRecord, error) {
	raw, err := json.Marshal(r.Completed(out))
	return store.TurnRecord{Finish: true,
		Response: store.StoredResponse{ShortID: r.ID, ConversationID: &out.Conversation.ID, Status: "completed", Body: raw},
		Events:   []store.NewEvent{responseEvent(r.ID, &out.Conversation.ShortID, "completed")}}, err
}
