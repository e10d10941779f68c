package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/metrics"
	"switchboard/store"
)

// TestQueueGaugesReadZeroForIdleKinds: a kind with nothing queued is reported as 0 rather
// than missing from the scrape, next to the kinds that have work waiting.
func TestQueueGaugesReadZeroForIdleKinds(t *testing.T) {
	m := metrics.New()
	m.Watch(metrics.Sources{
		JobQueue: func(context.Context) ([]store.JobQueueStat, error) {
			return []store.JobQueueStat{{Kind: "webhook_delivery", Waiting: 3, OldestAge: 2 * time.Second}}, nil
		},
		JobKinds: []string{"webhook_delivery", "crawl"},
	})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	scrape := string(body)
	require.Contains(t, scrape, `switchboard_job_queue_waiting{kind="webhook_delivery"} 3`)
	require.Contains(t, scrape, `switchboard_job_queue_oldest_age_seconds{kind="webhook_delivery"} 2`)
	require.Contains(t, scrape, `switchboard_job_queue_waiting{kind="crawl"} 0`)
	require.Contains(t, scrape, `switchboard_job_queue_oldest_age_seconds{kind="crawl"} 0`)
	require.Contains(t, scrape, `switchboard_job_queue_scrape_error 0`)
}
