package inbox

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestDisplayName(t *testing.T) {
	name := "  Ann Lee "
	for _, c := range []struct {
		display *string
		email   string
		want    string
	}{
		{&name, "ann@example.com", "Ann Lee"},
		{nil, "ann@example.com", "Ann"},
		{nil, "bo.smith@example.com", "Bo Smith"},
		{nil, "mary-jane_o@example.com", "Mary Jane O"},
		{nil, "@example.com", "Team"},
	} {
		require.Equal(t, c.want, DisplayName(c.display, c.email), c.email)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 123456000, time.UTC)
	id := uuid.New()
	gotAt, gotID, err := decodeCursor(encodeCursor(at, id))
	require.NoError(t, err)
	require.True(t, at.Equal(gotAt))
	require.Equal(t, id, gotID)
	for _, bad := range []string{"", "nonsense", "bm9jb2xvbg", encodeCursor(at, id)[:5]} {
		_, _, err := decodeCursor(bad)
		require.Error(t, err, bad)
	}
}

func TestCheckText(t *testing.T) {
	got, err := checkText("  hello  ")
	require.NoError(t, err)
	require.Equal(t, "hello", got)
	for _, bad := range []string{"", "   \n", strings.Repeat("é", MaxTextChars+1)} {
		_, err := checkText(bad)
		require.Error(t, err)
	}
	_, err = checkText(strings.Repeat("é", MaxTextChars))
	require.NoError(t, err)
}
