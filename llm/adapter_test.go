package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
)

var protocols = []string{llm.ProtocolAnthropic, llm.ProtocolOpenAI, llm.ProtocolGemini}

const testKey = "sk-test-secret-key"

// forEachProtocol runs a parallel subtest per protocol, each against its own fake vendor.
func forEachProtocol(t *testing.T, test func(t *testing.T, fake *llmtest.Fake, client llm.Client)) {
	t.Parallel()
	for _, protocol := range protocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New(t, protocol)
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: fake.URL, APIKey: testKey})
			require.NoError(t, err)
			test(t, fake, client)
		})
	}
}

// collect returns an onDelta that records every delta.
func collect(deltas *[]string) func(string) error {
	return func(d string) error {
		*deltas = append(*deltas, d)
		return nil
	}
}

func conversation() llm.Request {
	return llm.Request{
		Model:  "test-model-1",
		System: "You are terse.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Text: "Hi there"},
			{Role: llm.RoleAssistant, Text: "Hello."},
			{Role: llm.RoleUser, Text: "What is the weather in Paris?"},
		},
	}
}

func TestStreamingText(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		const text = "It is sunny in Paris today, with a light breeze."
		fake.Push(llmtest.Reply{Text: text, Chunks: 4, InputTokens: 21, OutputTokens: 9})
		req := conversation()

		var deltas []string
		res, err := client.Generate(context.Background(), req, collect(&deltas))
		require.NoError(t, err)

		require.Len(t, deltas, 4, "one delta per streamed piece")
		require.Equal(t, text, strings.Join(deltas, ""))
		require.Equal(t, text, res.Text)
		require.Equal(t, llm.FinishStop, res.Finish)
		require.Empty(t, res.ToolCalls)
		require.Equal(t, llm.Usage{InputTokens: 21, OutputTokens: 9}, res.Usage)

		reqs := fake.Requests()
		require.Len(t, reqs, 1)
		got := reqs[0]
		require.Equal(t, "test-model-1", got.Model)
		require.Equal(t, req.System, got.System)
		require.Equal(t, req.Messages, got.Messages)
		require.Empty(t, got.Tools)
		require.True(t, got.Stream)
		require.Equal(t, testKey, got.APIKey)
	})
}

func TestDefaultReply(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		res, err := client.Generate(context.Background(), conversation(), nil)
		require.NoError(t, err)
		require.Equal(t, "reply to: What is the weather in Paris?", res.Text)
		require.Equal(t, llm.Usage{InputTokens: llmtest.DefaultInputTokens, OutputTokens: llmtest.DefaultOutputTokens}, res.Usage)
	})
}

func TestToolCallRoundTrip(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		fake.Push(
			// No id: the fakes make one up like their vendors, except gemini, whose API sends none.
			llmtest.Reply{Text: "Let me check.", ToolCalls: []llm.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			llmtest.Reply{Text: "It is 21 degrees and sunny."},
		)
		req := conversation()
		req.Tools = []llm.Tool{{
			Name:        "get_weather",
			Description: "Current weather for a city",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}}

		first, err := client.Generate(context.Background(), req, nil)
		require.NoError(t, err)
		require.Equal(t, llm.FinishToolCalls, first.Finish)
		require.Equal(t, "Let me check.", first.Text)
		require.Len(t, first.ToolCalls, 1)
		call := first.ToolCalls[0]
		require.NotEmpty(t, call.ID)
		require.Equal(t, "get_weather", call.Name)
		require.JSONEq(t, `{"city":"Paris"}`, string(call.Arguments))

		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Text: first.Text, ToolCalls: first.ToolCalls},
			llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: call.ID, Name: "get_weather", Content: `{"temp_c":21,"sky":"sunny"}`}}},
		)
		second, err := client.Generate(context.Background(), req, nil)
		require.NoError(t, err)
		require.Equal(t, "It is 21 degrees and sunny.", second.Text)
		require.Equal(t, llm.FinishStop, second.Finish)

		reqs := fake.Requests()
		require.Len(t, reqs, 2)
		require.Equal(t, []string{"get_weather"}, reqs[0].Tools)
		got := reqs[1].Messages
		require.Len(t, got, 5)

		wantID := call.ID
		if fake.Protocol() == llm.ProtocolGemini {
			wantID = "" // made up by the adapter, so not sent back
		}
		require.Equal(t, llm.RoleAssistant, got[3].Role)
		require.Equal(t, "Let me check.", got[3].Text)
		require.Len(t, got[3].ToolCalls, 1)
		require.Equal(t, wantID, got[3].ToolCalls[0].ID)
		require.Equal(t, "get_weather", got[3].ToolCalls[0].Name)
		require.JSONEq(t, `{"city":"Paris"}`, string(got[3].ToolCalls[0].Arguments))

		require.Equal(t, llm.RoleTool, got[4].Role)
		require.Len(t, got[4].ToolResults, 1)
		result := got[4].ToolResults[0]
		require.Equal(t, wantID, result.CallID)
		require.Equal(t, "get_weather", result.Name)
		require.JSONEq(t, `{"temp_c":21,"sky":"sunny"}`, result.Content)
		require.False(t, result.IsError)
	})
}

func TestToolErrorResult(t *testing.T) {
	t.Parallel()
	// The OpenAI wire has no error flag for tool results; the other two carry it.
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolGemini} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New(t, protocol)
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: fake.URL, APIKey: testKey})
			require.NoError(t, err)
			req := conversation()
			req.Messages = append(req.Messages,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_9", Name: "get_weather", Arguments: json.RawMessage(`{}`)}}},
				llm.Message{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: "call_9", Name: "get_weather", Content: "city is required", IsError: true}}},
			)
			_, err = client.Generate(context.Background(), req, nil)
			require.NoError(t, err)
			got := fake.Requests()[0].Messages
			require.Equal(t, []llm.ToolResult{{CallID: "call_9", Name: "get_weather", Content: "city is required", IsError: true}}, got[len(got)-1].ToolResults)
		})
	}
}

func TestUpstreamErrors(t *testing.T) {
	cases := []struct {
		status int
		kind   llm.ErrorKind
	}{
		{500, llm.ErrUpstream},
		{503, llm.ErrUpstream},
		{400, llm.ErrUpstream},
		{429, llm.ErrRateLimited},
	}
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		for _, c := range cases {
			fake.Push(llmtest.Reply{Status: c.status})
			res, err := client.Generate(context.Background(), conversation(), nil)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, c.kind, e.Kind, "status %d", c.status)
			require.Equal(t, c.status, e.Status)
			require.NotContains(t, e.Message, testKey)
			require.NotContains(t, e.Message, fake.URL)
			require.NotContains(t, strings.ToLower(e.Message), fake.Protocol(), "the vendor stays hidden")
			require.Zero(t, res.Usage)
		}
		require.Len(t, fake.Requests(), len(cases), "no retries inside the adapter")
	})
}

func TestCutStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		fake.Push(llmtest.Reply{Text: "one two six ten!", Chunks: 4, CutAfter: 2, InputTokens: 30, OutputTokens: 5})
		var deltas []string
		res, err := client.Generate(context.Background(), conversation(), collect(&deltas))
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, llm.ErrMalformed, e.Kind)
		require.Equal(t, []string{"one ", "two "}, deltas)
		require.Equal(t, "one two ", res.Text)
		if fake.Protocol() != llm.ProtocolOpenAI { // OpenAI reports usage only in the last chunk
			require.Equal(t, int64(30), res.Usage.InputTokens, "usage reported before the cut is kept for metering")
		}
	})
}

func TestOnDeltaErrorAborts(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		fake.Push(llmtest.Reply{Text: "a long reply in many pieces", Chunks: 5})
		stop := errors.New("client went away")
		calls := 0
		res, err := client.Generate(context.Background(), conversation(), func(string) error {
			calls++
			return stop
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls)
		require.Equal(t, "a lon", res.Text)
		if fake.Protocol() != llm.ProtocolOpenAI {
			require.Positive(t, res.Usage.InputTokens)
		}
	})
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	for _, protocol := range protocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New(t, protocol)
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: fake.URL, APIKey: testKey, Timeout: 50 * time.Millisecond})
			require.NoError(t, err)
			fake.Push(llmtest.Reply{Text: "too late", Delay: 10 * time.Second})
			_, err = client.Generate(context.Background(), conversation(), nil)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, llm.ErrTimeout, e.Kind)
		})
	}
}

func TestCanceledContext(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := client.Generate(ctx, conversation(), nil)
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, llm.ErrCancelled, e.Kind, "a caller who gave up is not a vendor timing out")
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	for _, protocol := range protocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			// Port 1 on loopback: connection refused.
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: "http://127.0.0.1:1", APIKey: testKey})
			require.NoError(t, err)
			_, err = client.Generate(context.Background(), conversation(), nil)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, llm.ErrUpstream, e.Kind)
			require.Zero(t, e.Status)
			require.NotContains(t, e.Message, "127.0.0.1")
		})
	}
}

func TestInvalidToolJSONIsRejectedBeforeSending(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		req := conversation()
		req.Tools = []llm.Tool{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
		_, err := client.Generate(context.Background(), req, nil)
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Empty(t, fake.Requests())
	})
}

func TestNew(t *testing.T) {
	t.Parallel()
	_, err := llm.New(llm.Config{Protocol: "grpc"})
	require.ErrorContains(t, err, "anthropic, openai, gemini")

	_, err = llm.New(llm.Config{Protocol: llm.ProtocolOpenAI, BaseURL: "not a url"})
	require.Error(t, err)

	for _, protocol := range protocols {
		c, err := llm.New(llm.Config{Protocol: protocol, APIKey: "k"})
		require.NoError(t, err, protocol)
		require.NotNil(t, c)
	}
}

func TestBrokenJSONInStream(t *testing.T) {
	t.Parallel()
	for _, protocol := range protocols {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\n\n")
			}))
			t.Cleanup(srv.Close)
			base := srv.URL
			if protocol == llm.ProtocolOpenAI {
				base += "/v1"
			}
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: base, APIKey: testKey})
			require.NoError(t, err)
			_, err = client.Generate(context.Background(), conversation(), nil)
			var e *llm.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, llm.ErrMalformed, e.Kind)
		})
	}
}

// A deployed agent's history starts with its greeting (and its disclosure); the anthropic
// and gemini wires get a user turn first and the two assistant messages as one.
func TestHistoryStartingWithTheAssistant(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llm.ProtocolAnthropic, llm.ProtocolGemini, llm.ProtocolOpenAI} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New(t, protocol)
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: fake.URL, APIKey: testKey})
			require.NoError(t, err)
			req := llm.Request{Model: "test-model-1", Messages: []llm.Message{
				{Role: llm.RoleAssistant, Text: "Hi, I'm Tia."},
				{Role: llm.RoleAssistant, Text: "I am an AI assistant."},
				{Role: llm.RoleUser, Text: "Hello"},
			}}
			_, err = client.Generate(context.Background(), req, nil)
			require.NoError(t, err)
			got := fake.Requests()[0].Messages
			if protocol == llm.ProtocolOpenAI {
				require.Equal(t, req.Messages, got, "chat completions take the history as it is")
				return
			}
			require.Equal(t, []llm.Message{
				{Role: llm.RoleUser, Text: llm.OpeningUserText},
				{Role: llm.RoleAssistant, Text: "Hi, I'm Tia.\n\nI am an AI assistant."},
				{Role: llm.RoleUser, Text: "Hello"},
			}, got)
		})
	}
}

// A turn nobody streams asks for the whole reply at once; what it gets is what the stream
// of the same reply gives: text, tool calls in order, finish and usage.
func TestWholeReplyMatchesTheStream(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		reply := llmtest.Reply{Text: "Checking both.", Chunks: 3, InputTokens: 40, OutputTokens: 12, ToolCalls: []llm.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_2", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
		}}
		fake.Push(reply, reply)
		req := conversation()
		req.Tools = []llm.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}

		whole, err := client.Generate(context.Background(), req, nil)
		require.NoError(t, err)
		var deltas []string
		streamed, err := client.Generate(context.Background(), req, collect(&deltas))
		require.NoError(t, err)

		reqs := fake.Requests()
		require.False(t, reqs[0].Stream, "nobody reads the deltas: the whole reply at once")
		require.True(t, reqs[1].Stream)
		require.Equal(t, "Checking both.", whole.Text)
		require.Equal(t, llm.FinishToolCalls, whole.Finish)
		require.Equal(t, llm.Usage{InputTokens: 40, OutputTokens: 12}, whole.Usage)
		require.Len(t, whole.ToolCalls, 2)
		if fake.Protocol() == llm.ProtocolGemini { // no ids on that wire: the adapter makes them up
			for i := range whole.ToolCalls {
				require.NotEmpty(t, whole.ToolCalls[i].ID)
				whole.ToolCalls[i].ID, streamed.ToolCalls[i].ID = "", ""
			}
		}
		require.Equal(t, streamed, whole)
	})
}

func TestCutWholeReply(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, fake *llmtest.Fake, client llm.Client) {
		fake.Push(llmtest.Reply{Text: "one two six ten!", Chunks: 4, CutAfter: 2})
		res, err := client.Generate(context.Background(), conversation(), nil)
		var e *llm.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, llm.ErrMalformed, e.Kind)
		require.Empty(t, res.Text)
		require.False(t, fake.Requests()[0].Stream)
	})
}
