package mailer_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/mailer"
	"switchboard/mailer/mailtest"
)

func TestSendReachesTheSink(t *testing.T) {
	t.Parallel()
	sink := mailtest.New(t)
	s, err := mailer.New(sink.URL()+"?from=bot%40example.com", "noreply@localhost")
	require.NoError(t, err)
	require.NoError(t, s.Send(context.Background(), mailer.Message{To: []string{"team@example.com"},
		Subject: "Escalation: Zoë needs a human\r\nBcc: evil@example.com", Body: "line one\n.line two starts with a dot\n"}))
	got := sink.Messages()
	require.Len(t, got, 1)
	require.Equal(t, "bot@example.com", got[0].From)
	require.Equal(t, []string{"team@example.com"}, got[0].To)
	require.Equal(t, "Escalation: Zoë needs a human Bcc: evil@example.com", got[0].Subject)
	require.Equal(t, "line one\n.line two starts with a dot\n", got[0].Body)
}

// TestMessageIDFromTheCaller: a message sent twice with the same ID carries the same
// Message-ID, on the sender's domain, and an ID cannot inject a header.
func TestMessageIDFromTheCaller(t *testing.T) {
	t.Parallel()
	sink := mailtest.New(t)
	s, err := mailer.New(sink.URL()+"?from=bot%40example.com", "noreply@localhost")
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, s.Send(context.Background(), mailer.Message{To: []string{"team@example.com"}, Subject: "Digest", Body: "x",
			ID: "run_01.digest\r\nBcc: evil@example.com"}))
	}
	got := sink.Messages()
	require.Len(t, got, 2)
	for _, m := range got {
		require.Contains(t, m.Raw, "Message-ID: <run_01.digestBccevilexample.com@example.com>\r\n")
		require.NotContains(t, m.Raw, "\r\nBcc:")
	}
	require.NoError(t, s.Send(context.Background(), mailer.Message{To: []string{"team@example.com"}, Subject: "No id", Body: "x"}))
	require.NotContains(t, sink.Messages()[2].Raw, "Message-ID")
}

func TestConfiguration(t *testing.T) {
	t.Parallel()
	s, err := mailer.New("", "noreply@localhost")
	require.NoError(t, err)
	require.ErrorIs(t, s.Send(context.Background(), mailer.Message{To: []string{"a@example.com"}}), mailer.ErrNotConfigured)
	_, err = mailer.New("http://mail.example.com", "noreply@localhost")
	require.ErrorContains(t, err, "scheme")
	s, err = mailer.New("smtp://127.0.0.1:1", "noreply@localhost")
	require.NoError(t, err)
	require.ErrorContains(t, s.Send(context.Background(), mailer.Message{To: []string{"not an address"}}), "not an email address")
}
