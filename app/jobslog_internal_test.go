package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTheJobQueueLogsWarningsAndErrorsOnly: River's routine info lines (its job counts every
// 5 s) are dropped; its warnings and errors reach the log, tagged component=jobs, with the
// attributes and groups River adds.
func TestTheJobQueueLogsWarningsAndErrorsOnly(t *testing.T) {
	var buf bytes.Buffer
	log := jobsLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	log.Info("producer: Producer job counts", slog.Int("num_completed_jobs", 3))
	log.Debug("a debug line")
	log.With(slog.String("queue", "default")).WithGroup("job").Warn("job failed", slog.Int64("id", 7))
	log.Error("the client stopped")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2, buf.String())
	var warn, failure map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &warn))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &failure))
	require.Equal(t, "job failed", warn["msg"])
	require.Equal(t, "jobs", warn["component"])
	require.Equal(t, "default", warn["queue"])
	require.Equal(t, map[string]any{"id": float64(7)}, warn["job"])
	require.Equal(t, "the client stopped", failure["msg"])
	require.Equal(t, "jobs", failure["component"])
}
