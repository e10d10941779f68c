package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTooLargeNamesTheConfiguredLimit: the 413 says which limit applies, as configured.
func TestTooLargeNamesTheConfiguredLimit(t *testing.T) {
	t.Parallel()
	for limit, words := range map[int64]string{1 << 20: "1 MiB", 64 << 10: "64 KiB", 5000: "5000 bytes"} {
		b := setup(t, func(o *setupOpts) { o.bodyLimit = limit })
		resp, body := b.do(t, http.MethodPost, "/v1/responses", "Bearer "+b.key, `{"input":"`+strings.Repeat("x", int(limit))+`"}`)
		e := errorOf(t, resp, body, http.StatusRequestEntityTooLarge)
		require.Equal(t, "The request body is larger than the "+words+" limit.", e.Message)
	}
}
