package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/llm"
	"switchboard/llm/llmtest"
	"switchboard/openapi"
	"switchboard/openapi/contract"
)

var allModels = []string{"alpha-sonnet-4-6", "alpha-haiku-4-5", "alpha-opus-4-7", "beta-5.4", "beta-5.4-mini", "gamma-v4-flash", "gamma-v4-pro"}

func (b *testBundle) fakeFor(t *testing.T, model string) *llmtest.Fake {
	t.Helper()
	m, ok := catalog.Default().Lookup(model)
	require.True(t, ok)
	return b.vendors[m.Family]
}

func extraField(t *testing.T, raw, name string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m))
	s, _ := m[name].(string)
	return s
}

func TestChatCompletionsOnEveryModelThroughTheOfficialClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := b.openai(b.key)
	ctx := context.Background()
	for _, model := range allModels {
		fake := b.fakeFor(t, model)
		fake.Push(llmtest.Reply{Text: "Hello from " + model, InputTokens: 20, OutputTokens: 5})
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: openai.ChatModel(model),
			Messages: []openai.ChatCompletionMessageParamUnion{
				openai.SystemMessage("Answer in French."),
				openai.UserMessage("hi"),
			},
		})
		require.NoError(t, err, model)
		require.Equal(t, model, resp.Model)
		require.Equal(t, "Hello from "+model, resp.Choices[0].Message.Content)
		require.Equal(t, "stop", resp.Choices[0].FinishReason)
		require.Equal(t, int64(20), resp.Usage.PromptTokens)
		require.Equal(t, int64(5), resp.Usage.CompletionTokens)
		require.Equal(t, int64(25), resp.Usage.TotalTokens)
		require.True(t, strings.HasPrefix(resp.ID, "chatcmpl-"))
		require.Empty(t, extraField(t, resp.RawJSON(), "x_svc_conversation"), "ephemeral turns have no conversation")

		got := fake.Requests()[len(fake.Requests())-1]
		m, _ := catalog.Default().Lookup(model)
		require.Equal(t, m.Upstream, got.Model)
		require.Equal(t, "test-key-"+string(m.Family), got.APIKey)
		require.False(t, got.Stream, "a reply nobody streams is asked for whole")

		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         openai.ChatModel(model),
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		require.NoError(t, stream.Err(), model)
		require.Equal(t, "reply to: stream please", acc.Choices[0].Message.Content, model)
		require.Equal(t, "stop", acc.Choices[0].FinishReason)
		require.Equal(t, int64(11), acc.Usage.PromptTokens, "the fake's default usage")
		require.Equal(t, int64(7), acc.Usage.CompletionTokens)
		require.True(t, fake.Requests()[len(fake.Requests())-1].Stream, "a streamed reply streams from the vendor")
	}
	require.Zero(t, b.count(t, "conversations"))
	require.Zero(t, b.count(t, "messages"))
	require.Equal(t, 2*len(allModels), b.count(t, "ledger"), "ephemeral turns are still metered")
}

func TestResponsesCreateContinueAndRetrieve(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client := b.openai(b.key)
	fake := b.vendors[catalog.Alpha]
	fake.Push(llmtest.Reply{Text: "Nice to meet you, Ada."})

	first, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")},
		Instructions: openai.String("Always be brief."),
	})
	require.NoError(t, err)
	require.Equal(t, catalog.DefaultModel, first.Model, "no model runs the default")
	require.Equal(t, "completed", string(first.Status))
	require.Equal(t, "Nice to meet you, Ada.", first.OutputText())
	require.True(t, strings.HasPrefix(first.ID, "resp_"))
	conv := extraField(t, first.RawJSON(), "x_svc_conversation")
	require.True(t, strings.HasPrefix(conv, "mc-"), conv)

	sent := fake.Requests()[0]
	require.True(t, strings.HasPrefix(sent.System, "You are the Switchboard builder assistant"), "the service prompt comes first")
	require.True(t, strings.HasSuffix(sent.System, "Always be brief."), "client instructions are appended after it")
	require.Contains(t, sent.System, "## Additional instructions from the client")

	// Another key of the same workspace continues the conversation.
	other := b.openai(b.newKey(t, b.workspace, "viewer"))
	fake.Push(llmtest.Reply{Text: "Your name is Ada."})
	second, err := other.Responses.New(ctx, responses.ResponseNewParams{
		Model:              "alpha-haiku-4-5",
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")},
		PreviousResponseID: openai.String(first.ID),
	})
	require.NoError(t, err)
	require.Equal(t, "alpha-haiku-4-5", second.Model)
	require.Equal(t, conv, extraField(t, second.RawJSON(), "x_svc_conversation"))
	history := fake.Requests()[1].Messages
	require.Len(t, history, 3)
	require.Equal(t, "My name is Ada.", history[0].Text)
	require.Equal(t, llm.RoleAssistant, history[1].Role)
	require.Equal(t, "Nice to meet you, Ada.", history[1].Text)
	require.Equal(t, "What is my name?", history[2].Text)
	require.NotContains(t, fake.Requests()[1].System, "Always be brief.", "instructions belong to one turn")

	got, err := client.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.JSONEq(t, second.RawJSON(), got.RawJSON(), "a GET returns what the create returned")

	// No key of another workspace can read or continue it.
	ws2, err := b.store.CreateWorkspace(ctx, "rival", 5_000_000_000)
	require.NoError(t, err)
	rival := b.openai(b.newKey(t, ws2, "owner"))
	_, err = rival.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	requireAPIError(t, err, http.StatusNotFound, "response_not_found")
	_, err = rival.Responses.New(ctx, responses.ResponseNewParams{
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		PreviousResponseID: openai.String(first.ID),
	})
	requireAPIError(t, err, http.StatusNotFound, "response_not_found")
	_, err = rival.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "beta-5.4",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}, option.WithJSONSet("conversation", conv))
	requireAPIError(t, err, http.StatusNotFound, "conversation_not_found")
}

func requireAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var apiErr *openai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	require.Equal(t, status, apiErr.StatusCode)
	require.Equal(t, code, apiErr.Code)
}

func TestChatContinuesAStoredConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client := b.openai(b.key)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("remember 42")},
	})
	require.NoError(t, err)
	conv := extraField(t, first.RawJSON(), "x_svc_conversation")

	beta := b.vendors[catalog.Beta]
	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "beta-5.4",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("this earlier message is ignored: the server owns history"),
			openai.UserMessage("what number?"),
		},
	}, option.WithJSONSet("conversation", conv))
	require.NoError(t, err)
	require.Equal(t, conv, extraField(t, resp.RawJSON(), "x_svc_conversation"))
	sent := beta.Requests()[0].Messages
	require.Len(t, sent, 3)
	require.Equal(t, "remember 42", sent[0].Text)
	require.Equal(t, "what number?", sent[2].Text)

	// By UUID too, and the turn was persisted: a third turn sees five messages.
	var id string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT id::text FROM conversations WHERE short_id = $1`, conv).Scan(&id))
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "beta-5.4", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("again")},
	}, option.WithJSONSet("conversation", id))
	require.NoError(t, err)
	require.Len(t, beta.Requests()[1].Messages, 5)

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "beta-5.4", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	}, option.WithJSONSet("conversation", "mc-doesnotexist"))
	requireAPIError(t, err, http.StatusNotFound, "conversation_not_found")
}

func TestStoreFalseLeavesNoRecord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	client := b.openai(b.key)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("secret")},
		Store: openai.Bool(false),
	})
	require.NoError(t, err)
	require.Equal(t, "reply to: secret", resp.OutputText())
	require.Empty(t, extraField(t, resp.RawJSON(), "x_svc_conversation"))
	for _, table := range []string{"responses", "conversations", "messages"} {
		require.Zero(t, b.count(t, table), table)
	}
	require.Equal(t, 1, b.count(t, "ledger"), "spend is recorded all the same")

	_, err = client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	requireAPIError(t, err, http.StatusNotFound, "response_not_found")
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("more")},
		PreviousResponseID: openai.String(resp.ID),
	})
	requireAPIError(t, err, http.StatusNotFound, "response_not_found")

	r, body := b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"x","store":false,"background":true}`)
	e := errorOf(t, r, body, http.StatusBadRequest)
	require.Equal(t, "background", str(e.Param))
}

func TestMeteringChargesTheModelPriceWithLedgerAndEventsInOneTransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	before := b.balance(t)
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "ok", InputTokens: 1000, OutputTokens: 500})
	client := b.openai(b.key)
	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "alpha-sonnet-4-6",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("price me")},
	})
	require.NoError(t, err)
	require.Equal(t, int64(1000), resp.Usage.InputTokens)
	require.Equal(t, int64(500), resp.Usage.OutputTokens)
	// $3/M input and $15/M output: 0.003 + 0.0075 dollars.
	const cost = 10_500_000
	require.Equal(t, before-cost, b.balance(t))

	var amount, balanceAfter int64
	var ledgerTx, responseTx string
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT amount_nano_usd, balance_after, xmin::text FROM ledger`).Scan(&amount, &balanceAfter, &ledgerTx))
	require.Equal(t, int64(-cost), amount)
	require.Equal(t, before-cost, balanceAfter)
	require.NoError(t, b.store.Pool().QueryRow(ctx, `SELECT xmin::text FROM responses`).Scan(&responseTx))
	require.Equal(t, ledgerTx, responseTx)

	rows, err := b.store.Pool().Query(ctx, `SELECT type, envelope, xmin::text FROM events ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var types []string
	for rows.Next() {
		var typ, envelope, tx string
		require.NoError(t, rows.Scan(&typ, &envelope, &tx))
		require.Equal(t, ledgerTx, tx, "%s committed with the ledger row", typ)
		types = append(types, typ)
		var env map[string]any
		require.NoError(t, json.Unmarshal([]byte(envelope), &env))
		require.ElementsMatch(t, []string{"id", "type", "workspace_id", "created_at", "data"}, keys(env))
		require.True(t, strings.HasPrefix(env["id"].(string), "evt_"))
		require.Equal(t, b.workspace.ID.String(), env["workspace_id"])
		data := env["data"].(map[string]any)
		switch typ {
		case "turn.completed":
			require.Equal(t, "responses", data["surface"])
			require.Equal(t, "ok", data["reply_preview"])
			require.Equal(t, "stop", data["finish_reason"])
			require.Equal(t, "alpha-sonnet-4-6", data["model"])
			require.True(t, strings.HasPrefix(data["conversation_id"].(string), "mc-"))
		case "spend.recorded":
			require.Equal(t, 0.0105, data["amount_usd"])
			require.Equal(t, "model_usage", data["category"])
			require.InDelta(t, float64(before-cost)/1e9, data["balance_usd"], 1e-9)
		}
	}
	require.Equal(t, []string{"conversation.created", "turn.completed", "spend.recorded"}, types)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestWorkspaceWithoutCreditIsRefusedBeforeTheVendorIsCalled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.store.AddCredit(context.Background(), b.workspace.Name, -b.balance(t))
	require.NoError(t, err)
	client := b.openai(b.key)
	_, err = client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "beta-5.4", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	requireAPIError(t, err, http.StatusForbidden, "insufficient_quota")
	require.Empty(t, b.vendors[catalog.Beta].Requests())
}

func TestForeignFieldsOnTurnBodiesAreIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, body := b.do(t, "POST", "/v1/chat/completions", "Bearer "+b.key,
		`{"model":"beta-5.4","messages":[{"role":"user","content":[{"type":"text","text":"hi"}],"name":"x"}],"temperature":0.2,"tools":[],"metadata":{"a":"b"},"top_p":1,"n":1}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	resp, body = b.do(t, "POST", "/v1/responses", "Bearer "+b.key,
		`{"model":"gamma-v4-pro","input":[{"role":"developer","content":"be terse"},{"role":"user","content":"hi","type":"message"}],"temperature":1,"tools":[],"reasoning":{"effort":"low"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, b.vendors[catalog.Gamma].Requests()[0].System, "be terse")
}

// v1-api.md, POST /v1/responses: "Input rules: leading `system`/`developer` items are lifted
// into additional instructions; the last `user` item is the turn text." A later developer item
// keeps its place in the history; an item after the last user item is refused with a 400
// naming its index (the spec is silent; dropping it silently would hide the client's mistake).
func TestResponsesInputItemsFollowTheSpec(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := b.vendors[catalog.Gamma]
	resp, body := b.do(t, "POST", "/v1/responses", "Bearer "+b.key, `{"model":"gamma-v4-pro","store":false,"input":[
		{"role":"system","content":"lead one"},{"role":"developer","content":"lead two"},
		{"role":"user","content":"first"},{"role":"developer","content":"later rule"},
		{"role":"assistant","content":"ok"},{"role":"user","content":"second"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	sent := fake.Requests()[0]
	require.Contains(t, sent.System, "lead one")
	require.Contains(t, sent.System, "lead two")
	require.NotContains(t, sent.System, "later rule", "only leading items are lifted")
	var texts []string
	for _, m := range sent.Messages {
		texts = append(texts, string(m.Role)+": "+m.Text)
	}
	require.Equal(t, []string{"user: first", "user: [developer message] later rule", "assistant: ok", "user: second"}, texts)

	for _, tc := range []struct{ input, param string }{
		{`[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]`, "input[1]"},
		{`[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"developer","content":"late"}]`, "input[2]"},
	} {
		resp, body := b.do(t, "POST", "/v1/responses", "Bearer "+b.key, `{"model":"gamma-v4-pro","input":`+tc.input+`}`)
		e := errorOf(t, resp, body, http.StatusBadRequest)
		require.Equal(t, "after_last_user_message", str(e.Code), string(body))
		require.Equal(t, tc.param, str(e.Param))
	}
	require.Len(t, fake.Requests(), 1, "a refused input reaches no vendor")
	require.Zero(t, b.count(t, "conversations"), "and writes nothing")
}

func TestUpstreamFailureBeforeOutputIsA500WithHint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, stream := range []string{"false", "true"} {
		b.vendors[catalog.Beta].Push(llmtest.Reply{Status: http.StatusInternalServerError})
		resp, body := b.do(t, "POST", "/v1/chat/completions", "Bearer "+b.key, `{"model":"beta-5.4","stream":`+stream+`,"messages":[{"role":"user","content":"hi"}]}`)
		e := errorOf(t, resp, body, http.StatusInternalServerError)
		require.Equal(t, "upstream_error", str(e.Code))
		require.NotEmpty(t, e.Hint)
		require.NotContains(t, e.Message, b.vendors[catalog.Beta].URL, "no internal addresses")
	}
}

// responseEventSchemas names the schema of each event of a Responses stream, as the
// document's x-sse-frames does (the contract Transport checks every frame by that list too).
var responseEventSchemas = map[string]string{
	"response.created":            "ResponseCreatedEvent",
	"response.output_item.added":  "ResponseOutputItemAddedEvent",
	"response.content_part.added": "ResponseContentPartAddedEvent",
	"response.output_text.delta":  "ResponseTextDeltaEvent",
	"response.output_text.done":   "ResponseTextDoneEvent",
	"response.content_part.done":  "ResponseContentPartDoneEvent",
	"response.output_item.done":   "ResponseOutputItemDoneEvent",
	"response.completed":          "ResponseCompletedEvent",
	"error":                       "ResponseErrorEvent",
}

// sseFrames reads a whole event stream into (event, data) pairs.
func sseFrames(t *testing.T, body string) [][2]string {
	t.Helper()
	var frames [][2]string
	var event string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			frames = append(frames, [2]string{event, strings.TrimPrefix(line, "data: ")})
			event = ""
		}
	}
	return frames
}

func TestChatStreamFrames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendors[catalog.Gamma].Push(llmtest.Reply{Text: "one two three", Chunks: 3, InputTokens: 4, OutputTokens: 3})
	resp, body := b.do(t, "POST", "/v1/chat/completions", "Bearer "+b.key,
		`{"model":"gamma-v4-flash","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-cache", resp.Header.Get("Cache-Control"))
	require.NotEmpty(t, resp.Header.Get("X-RateLimit-Remaining"))
	frames := sseFrames(t, string(body))
	require.Equal(t, "[DONE]", frames[len(frames)-1][1])

	var chunks []map[string]any
	for _, f := range frames[:len(frames)-1] {
		contract.CheckFrame(t, openapi.V1YAML, "ChatCompletionChunk", []byte(f[1]))
		var c map[string]any
		require.NoError(t, json.Unmarshal([]byte(f[1]), &c))
		chunks = append(chunks, c)
	}
	id := chunks[0]["id"]
	var text strings.Builder
	for i, c := range chunks {
		require.Equal(t, id, c["id"], "one id for the whole stream")
		require.Equal(t, "chat.completion.chunk", c["object"])
		require.Equal(t, chunks[0]["created"], c["created"])
		choices := c["choices"].([]any)
		if i == len(chunks)-1 {
			require.Empty(t, choices, "the usage chunk has no choices")
			usage := c["usage"].(map[string]any)
			require.Equal(t, 7.0, usage["total_tokens"])
			continue
		}
		delta := choices[0].(map[string]any)["delta"].(map[string]any)
		if i == 0 {
			require.Equal(t, "assistant", delta["role"])
		}
		if s, ok := delta["content"].(string); ok {
			text.WriteString(s)
		}
		finish := choices[0].(map[string]any)["finish_reason"]
		if i == len(chunks)-2 {
			require.Equal(t, "stop", finish)
		} else {
			require.Nil(t, finish)
		}
	}
	require.Equal(t, "one two three", text.String())
	require.GreaterOrEqual(t, len(chunks), 3+3, "role, three deltas, finish, usage")
}

func TestResponsesStreamFramesAndFinalObject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "streamed reply here", Chunks: 3})
	resp, body := b.do(t, "POST", "/v1/responses", "Bearer "+b.key, `{"input":"go","stream":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := sseFrames(t, string(body))
	var types []string
	var final map[string]any
	for i, f := range frames {
		contract.CheckFrame(t, openapi.V1YAML, responseEventSchemas[f[0]], []byte(f[1]))
		var data map[string]any
		require.NoError(t, json.Unmarshal([]byte(f[1]), &data))
		require.Equal(t, f[0], data["type"])
		require.Equal(t, float64(i), data["sequence_number"])
		if len(types) == 0 || types[len(types)-1] != f[0] {
			types = append(types, f[0])
		}
		if f[0] == "response.completed" {
			final = data["response"].(map[string]any)
		}
	}
	require.Equal(t, []string{"response.created", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}, types)
	require.Equal(t, "streamed reply here", final["output_text"])

	r, got := b.get(t, "/v1/responses/"+final["id"].(string))
	require.Equal(t, http.StatusOK, r.StatusCode)
	finalJSON, _ := json.Marshal(final)
	require.JSONEq(t, string(finalJSON), string(got), "the streamed final object is what a GET returns")
}

func TestResponsesStreamThroughTheOfficialClientOnEveryProtocol(t *testing.T) {
	t.Parallel()
	b := setup(t)
	client := b.openai(b.key)
	for _, model := range []string{"alpha-opus-4-7", "beta-5.4-mini", "gamma-v4-pro"} {
		stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
			Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("tell me")},
		})
		var deltas strings.Builder
		var completed responses.Response
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(ev.Delta)
			case "response.completed":
				completed = ev.AsResponseCompleted().Response
			}
		}
		require.NoError(t, stream.Err(), model)
		require.Equal(t, "reply to: tell me", deltas.String(), model)
		require.Equal(t, "reply to: tell me", completed.OutputText(), model)
		require.Equal(t, int64(18), completed.Usage.TotalTokens)
	}
}

func TestStreamCutMidwayEndsWithAnErrorFrameAndIsMetered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2, InputTokens: 50})
	resp, body := b.do(t, "POST", "/v1/chat/completions", "Bearer "+b.key, `{"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := sseFrames(t, string(body))
	last := frames[len(frames)-1][1]
	require.NotEqual(t, "[DONE]", last)
	contract.CheckFrame(t, openapi.V1YAML, "ErrorResponse", []byte(last))
	var e struct{ Error apiError }
	require.NoError(t, json.Unmarshal([]byte(last), &e))
	require.Equal(t, "malformed_stream", str(e.Error.Code))
	require.Equal(t, 1, b.count(t, "ledger"), "usage consumed before the cut is metered")

	b.vendors[catalog.Alpha].Push(llmtest.Reply{Text: "a b c d e f", Chunks: 6, CutAfter: 2, InputTokens: 50})
	resp, body = b.do(t, "POST", "/v1/responses", "Bearer "+b.key, `{"stream":true,"input":"hi"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames = sseFrames(t, string(body))
	require.Equal(t, "error", frames[len(frames)-1][0])
	contract.CheckFrame(t, openapi.V1YAML, "ResponseErrorEvent", []byte(frames[len(frames)-1][1]))
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(frames[len(frames)-1][1]), &ev))
	require.Equal(t, "malformed_stream", ev["code"])
	require.Zero(t, b.count(t, "responses"), "a failed turn stores no response")
}

// The builder assistant's turns use the same management operations as the MCP tools.
func TestBuilderAssistantTurnsUseTheManagementTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := b.vendors[catalog.Alpha]
	fake.Push(
		llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "create_agent", Arguments: json.RawMessage(`{"yaml":` + strconv.Quote(agentYAML("Made in chat")) + `}`)}}},
		llmtest.Reply{Text: "Your agent is ready."},
	)
	resp, raw := b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"Make me an order desk agent"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Contains(t, string(raw), "Your agent is ready.")
	result := fake.Requests()[1].Messages[2].ToolResults[0]
	require.Contains(t, result.Content, `"success":true`)
	require.Contains(t, result.Content, `"agentName":"Made in chat"`)
	require.Equal(t, 1, b.count(t, "agents"), "the tool really ran, in the caller's workspace")
	require.Contains(t, fake.Requests()[0].Tools, "delete_agent", "a stored turn is offered every tool")

	resp, raw = b.do(t, http.MethodPost, "/v1/chat/completions", "Bearer "+b.key, `{"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	offered := fake.Requests()[2].Tools
	require.Contains(t, offered, "list_agents")
	require.NotContains(t, offered, "delete_agent", "ephemeral turns are offered safe tools only")
	require.NotContains(t, offered, "update_agent")
}
