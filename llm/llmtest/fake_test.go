package llmtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"switchboard/llm"
	"switchboard/llm/llmtest"
)

var weather = []llm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}

// The non-streaming answers are checked with the vendors' own SDKs, which the adapters do
// not use for them.

func TestAnthropicNonStreaming(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewAnthropic(t)
	fake.Push(llmtest.Reply{Text: "Checking.", ToolCalls: weather, InputTokens: 5, OutputTokens: 3})
	client := anthropic.NewClient(aoption.WithoutEnvironmentDefaults(), aoption.WithBaseURL(fake.URL), aoption.WithAPIKey("k"), aoption.WithMaxRetries(0))
	msg, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	require.Equal(t, "Checking.", msg.Content[0].Text)
	require.Equal(t, "call_1", msg.Content[1].ID)
	require.JSONEq(t, `{"city":"Paris"}`, string(msg.Content[1].Input))
	require.Equal(t, int64(5), msg.Usage.InputTokens)
	require.Equal(t, int64(3), msg.Usage.OutputTokens)
	require.False(t, fake.Requests()[0].Stream)
}

func TestOpenAINonStreaming(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Reply{ToolCalls: weather})
	client := openai.NewClient(ooption.WithBaseURL(fake.URL), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0))
	c, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	require.NoError(t, err)
	require.Equal(t, "tool_calls", c.Choices[0].FinishReason)
	require.Equal(t, "get_weather", c.Choices[0].Message.ToolCalls[0].Function.Name)
	require.Equal(t, int64(llmtest.DefaultInputTokens), c.Usage.PromptTokens)
	require.Equal(t, "/v1/chat/completions", fake.Requests()[0].Path)
}

func TestGeminiNonStreaming(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewGemini(t)
	fake.Push(llmtest.Reply{Text: "Sunny.", InputTokens: 4, OutputTokens: 2})
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: fake.URL},
	})
	require.NoError(t, err)
	resp, err := client.Models.GenerateContent(context.Background(), "gemini-test", genai.Text("hi"), nil)
	require.NoError(t, err)
	require.Equal(t, "Sunny.", resp.Text())
	require.Equal(t, int32(4), resp.UsageMetadata.PromptTokenCount)
	got := fake.Requests()[0]
	require.Equal(t, "gemini-test", got.Model)
	require.False(t, got.Stream)
	require.Equal(t, "k", got.APIKey)
}

func TestUnknownRouteIsNotRecorded(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"anthropic", "openai", "gemini"} {
		fake := llmtest.New(t, protocol)
		resp, err := http.Post(fake.URL+"/nowhere", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode, protocol)
		require.Empty(t, fake.Requests())
		require.Equal(t, protocol, fake.Protocol())
	}
}

func TestRequestsIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
			resp, err := http.Post(fake.URL+"/chat/completions", "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
			_ = fake.Requests()
		}()
	}
	wg.Wait()
	require.Len(t, fake.Requests(), 8)
}
