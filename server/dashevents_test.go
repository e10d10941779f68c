package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/store"
)

// TestDashboardEventsPage: the Events page shows the latest events and the script that keeps
// it live; its stream, signed in by the session, replays after the page's cursor and then
// sends new events as they happen. Without a session the stream is refused.
func TestDashboardEventsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.store.AppendEvents(ctx, b.workspace.ID, []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"note": "first"}}})
	require.NoError(t, err)

	viewer := b.signedIn(t, "viewer")
	resp, err := viewer.client.Get(b.url + "/dashboard/events")
	require.NoError(t, err)
	page := string(readAll(t, resp))
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, "spend.recorded")
	require.Contains(t, page, `{&#34;note&#34;:&#34;first&#34;}`)
	require.Contains(t, page, `<script src="/dashboard/static/events.js" defer></script>`)
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	require.Regexp(t, `data-after="\d+"`, page)

	resp, err = http.Get(b.url + "/dashboard/events/stream")
	require.NoError(t, err)
	_ = readAll(t, resp)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, b.url+"/dashboard/events/stream?after=0", nil)
	require.NoError(t, err)
	resp, err = viewer.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	lines := bufio.NewScanner(resp.Body)
	next := func() string { // the data line of the next event
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "event: ") {
				require.Equal(t, "event: message", l)
			} else if strings.HasPrefix(l, "data: ") {
				return l
			}
		}
		t.Fatal("the stream ended")
		return ""
	}
	require.Contains(t, next(), `"note":"first"`)
	_, err = b.store.AppendEvents(ctx, b.workspace.ID, []store.NewEvent{{Type: "spend.recorded", Data: map[string]any{"note": "live"}}})
	require.NoError(t, err)
	require.Contains(t, next(), `"note":"live"`)
}
