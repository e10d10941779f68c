package llm

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// localClient answers without any vendor, so development works without keys.
type localClient struct{ family string }

// NewLocal returns the development responder for a family that has no API key: a
// deterministic reply, streamed word by word, with estimated usage. It never calls tools.
func NewLocal(family string) Client { return localClient{family: family} }

func (c localClient) Generate(ctx context.Context, req Request, onDelta func(string) error) (Result, error) {
	res := Result{Finish: FinishStop, Usage: Usage{InputTokens: estimateTokens(promptText(req))}}
	if err := ctx.Err(); err != nil {
		return res, failure{err: err}.toError(ctx)
	}
	reply := fmt.Sprintf("[local responder] No API key is configured for the %s models, so this is a local reply. You said: %s",
		c.family, lastUserText(req.Messages))
	var sent strings.Builder
	for _, word := range strings.SplitAfter(reply, " ") {
		sent.WriteString(word)
		if err := emit(onDelta, word); err != nil {
			res.Text, res.Usage.OutputTokens = sent.String(), estimateTokens(sent.String())
			return res, err
		}
	}
	res.Text, res.Usage.OutputTokens = reply, estimateTokens(reply)
	return res, nil
}

// promptText is everything the prompt consists of, for the usage estimate.
func promptText(req Request) string {
	var b strings.Builder
	b.WriteString(req.System)
	for _, m := range req.Messages {
		b.WriteString(m.Text)
	}
	return b.String()
}

func lastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text
		}
	}
	return ""
}

// estimateTokens uses the common rule of thumb of four characters per token, rounded up.
func estimateTokens(s string) int64 {
	return int64((utf8.RuneCountInString(s) + 3) / 4)
}

// unconfiguredClient stands for a family whose vendor has no key in production.
type unconfiguredClient struct{ family, envVar string }

// NewUnconfigured returns a client that always fails with ErrNotConfigured, naming the
// environment variable that would configure the family.
func NewUnconfigured(family, envVar string) Client {
	return unconfiguredClient{family: family, envVar: envVar}
}

func (c unconfiguredClient) Generate(context.Context, Request, func(string) error) (Result, error) {
	return Result{}, &Error{
		Kind:    ErrNotConfigured,
		Message: fmt.Sprintf("no API key is configured for the %s models: set %s", c.family, c.envVar),
	}
}
