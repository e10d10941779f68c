package converse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPhraseMatching(t *testing.T) {
	t.Parallel()
	require.True(t, containsPhrase(words("I want a REFUND, now!"), "refund"))
	require.False(t, containsPhrase(words("Is this nonrefundable?"), "refund"))
	require.False(t, containsPhrase(words("refunds"), "refund"))
	require.True(t, containsPhrase(words("What about competitor   pricing?"), "Competitor pricing"))
	require.False(t, containsPhrase(words("pricing of a competitor"), "competitor pricing"))
	require.Equal(t, "real person", firstPhrase(words("Can I talk to a real person?"), HumanRequestPhrases[1:]))
}

func TestSentiment(t *testing.T) {
	t.Parallel()
	require.LessOrEqual(t, Sentiment("This is terrible and useless."), SentimentThreshold)
	require.LessOrEqual(t, Sentiment("Worst service ever"), SentimentThreshold)
	require.Greater(t, Sentiment("Thanks, that was helpful"), SentimentThreshold)
	require.Equal(t, -2, Sentiment("not helpful, not good"))
	require.Greater(t, Sentiment("This is bad"), SentimentThreshold)
}

func TestExtractContact(t *testing.T) {
	t.Parallel()
	name, email, phone := extractContact("Sure, I'm Ada and my email is ada@example.com")
	require.Equal(t, []string{"Ada", "ada@example.com", ""}, []string{name, email, phone})
	name, email, phone = extractContact("My name is Grace Hopper, call +1 (555) 010-2030")
	require.Equal(t, []string{"Grace Hopper", "", "+1 (555) 010-2030"}, []string{name, email, phone})
	name, email, phone = extractContact("what are your prices?")
	require.Equal(t, []string{"", "", ""}, []string{name, email, phone})
	require.True(t, cannotHelp("I'm sorry, I don't know that."))
	require.False(t, cannotHelp("We open at nine."))
}
