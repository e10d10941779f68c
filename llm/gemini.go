package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"google.golang.org/genai"
)

// generatedIDPrefix marks tool call ids this adapter made up because the Gemini API gave
// none. They are not sent back: the API pairs calls and responses by name and order.
const generatedIDPrefix = "gemini-call-"

// geminiClient speaks the Gemini API (generativelanguage), not Vertex AI.
type geminiClient struct {
	client  *genai.Client
	timeout time.Duration
}

// NewGemini returns the adapter for the Gemini API.
func NewGemini(cfg Config) (Client, error) {
	if err := checkBaseURL(cfg.BaseURL); err != nil {
		return nil, err
	}
	cc := &genai.ClientConfig{
		// Setting both the key and the backend keeps GEMINI_API_KEY, GOOGLE_API_KEY and
		// GOOGLE_GENAI_USE_VERTEXAI in the environment from taking part.
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: cfg.HTTPClient,
		HTTPOptions: genai.HTTPOptions{
			BaseURL: cfg.BaseURL,
			// One attempt only: the turn pipeline decides about retries.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)},
		},
	}
	client, err := genai.NewClient(context.Background(), cc)
	if err != nil {
		return nil, err
	}
	return &geminiClient{client: client, timeout: cfg.Timeout}, nil
}

func (c *geminiClient) Generate(ctx context.Context, req Request, onDelta func(string) error) (Result, error) {
	if err := checkRequest(req); err != nil {
		return Result{}, err
	}
	ctx, cancel := withTimeout(ctx, c.timeout)
	defer cancel()

	var acc geminiAccumulator
	if onDelta == nil { // the whole reply at once (see complete.go)
		reply, err := c.client.Models.GenerateContent(ctx, req.Model, geminiContents(userFirst(req.Messages)), geminiConfig(req))
		if err != nil {
			status, refused := geminiStatus(err)
			return Result{}, failure{err: err, status: status, refused: refused}.toError(ctx)
		}
		acc.add(reply)
		if !acc.done {
			return acc.res, incomplete()
		}
		return acc.res, settleErr(&acc.res)
	}
	started := false
	for chunk, err := range c.client.Models.GenerateContentStream(ctx, req.Model, geminiContents(userFirst(req.Messages)), geminiConfig(req)) {
		if err != nil {
			status, refused := geminiStatus(err)
			return acc.res, failure{err: err, status: status, refused: refused, started: started}.toError(ctx)
		}
		started = true
		delta := acc.add(chunk)
		if err := emit(onDelta, delta); err != nil {
			return acc.res, err
		}
	}
	res := acc.res
	if !acc.done {
		if err := ctx.Err(); err != nil { // the SDK ends the stream quietly on some cancellations
			return res, failure{err: err, started: started}.toError(ctx)
		}
		return res, truncated()
	}
	if err := settle(&res); err != nil {
		return res, err
	}
	return res, nil
}

func geminiConfig(req Request) *genai.GenerateContentConfig {
	cfg := &genai.GenerateContentConfig{
		MaxOutputTokens: int32(maxTokens(req)),
		// Resuming a broken stream is a retry; the turn pipeline decides about those.
		AutomaticContinuation: genai.Ptr(false),
	}
	if req.Temperature != nil {
		cfg.Temperature = genai.Ptr(float32(*req.Temperature))
	}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Tools) > 0 {
		var decls []*genai.FunctionDeclaration
		for _, t := range req.Tools {
			d := &genai.FunctionDeclaration{Name: t.Name, Description: t.Description}
			if len(t.Parameters) > 0 {
				d.ParametersJsonSchema = t.Parameters
			}
			decls = append(decls, d)
		}
		cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	}
	return cfg
}

func geminiContents(msgs []Message) []*genai.Content {
	var out []*genai.Content
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			out = append(out, genai.NewContentFromText(m.Text, genai.RoleUser))
		case RoleAssistant:
			var parts []*genai.Part
			if m.Text != "" {
				parts = append(parts, genai.NewPartFromText(m.Text))
			}
			for _, tc := range m.ToolCalls {
				var args map[string]any
				_ = json.Unmarshal(arguments(tc.Arguments), &args) // checked by checkRequest
				parts = append(parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: wireID(tc.ID), Name: tc.Name, Args: args}})
			}
			if len(parts) > 0 {
				out = append(out, genai.NewContentFromParts(parts, genai.RoleModel))
			}
		case RoleTool:
			var parts []*genai.Part
			for _, r := range m.ToolResults {
				parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
					ID: wireID(r.CallID), Name: r.Name, Response: geminiResponse(r),
				}})
			}
			out = append(out, genai.NewContentFromParts(parts, genai.RoleUser))
		}
	}
	return out
}

// geminiResponse wraps a tool result the way the API documents it: the result under
// "output", or under "error" when the tool failed. JSON content goes in as JSON.
func geminiResponse(r ToolResult) map[string]any {
	var value any = r.Content
	var decoded any
	if json.Unmarshal([]byte(r.Content), &decoded) == nil {
		value = decoded
	}
	if r.IsError {
		return map[string]any{"error": value}
	}
	return map[string]any{"output": value}
}

func wireID(id string) string {
	if strings.HasPrefix(id, generatedIDPrefix) {
		return ""
	}
	return id
}

func newCallID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return generatedIDPrefix + hex.EncodeToString(b)
}

// geminiAccumulator gathers the streamed chunks of the first candidate.
type geminiAccumulator struct {
	res  Result
	done bool
}

// add takes one chunk and returns its text delta.
func (a *geminiAccumulator) add(chunk *genai.GenerateContentResponse) string {
	if u := chunk.UsageMetadata; u != nil {
		// Counts are totals so far. Thinking tokens are billed as output.
		a.res.Usage = Usage{InputTokens: int64(u.PromptTokenCount), OutputTokens: int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount)}
	}
	if len(chunk.Candidates) == 0 {
		if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
			a.res.Finish, a.done = FinishContentFilter, true // the prompt itself was blocked
		}
		return ""
	}
	cand := chunk.Candidates[0]
	var delta strings.Builder
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			a.addPart(p, &delta)
		}
	}
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		a.res.Finish, a.done = geminiFinish(cand.FinishReason), true
	}
	a.res.Text += delta.String()
	return delta.String()
}

func (a *geminiAccumulator) addPart(p *genai.Part, delta *strings.Builder) {
	switch {
	case p.FunctionCall != nil:
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = newCallID()
		}
		args, _ := json.Marshal(fc.Args) // a map decoded from JSON always encodes
		if fc.Args == nil {
			args = []byte("{}")
		}
		a.res.ToolCalls = append(a.res.ToolCalls, ToolCall{ID: id, Name: fc.Name, Arguments: args})
	case p.Thought:
		// Thought summaries are not part of the reply.
	default:
		delta.WriteString(p.Text)
	}
}

func geminiFinish(reason genai.FinishReason) FinishReason {
	switch reason {
	case genai.FinishReasonStop:
		return FinishStop
	case genai.FinishReasonMaxTokens:
		return FinishLength
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls:
		return FinishStop // the model's tool call failed; what text there is, is the reply
	default: // SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, LANGUAGE, OTHER, ...
		return FinishContentFilter
	}
}

// geminiStatus reports the HTTP status of an API error, whether it came as the response
// status or as an error object inside the stream.
func geminiStatus(err error) (status int, refused bool) {
	var apiErr genai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code, true
	}
	var apiErrPtr *genai.APIError
	if errors.As(err, &apiErrPtr) {
		return apiErrPtr.Code, true
	}
	return 0, false
}
