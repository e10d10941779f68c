package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMCPUnauthorizedAnswersABearerChallenge: a 401 of /mcp carries WWW-Authenticate, which
// MCP clients need to tell a bad key from an OAuth server they cannot use.
func TestMCPUnauthorizedAnswersABearerChallenge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(auth string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, b.url+"/mcp", strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}

	resp := post("") // production: no development fallback
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Equal(t, `Bearer realm="switchboard", resource_metadata="`+b.url+`/.well-known/oauth-protected-resource/mcp", scope="mcp"`,
		resp.Header.Get("WWW-Authenticate"))

	resp = post("Bearer sk-svc_" + strings.Repeat("x", 40))
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	challenge := resp.Header.Get("WWW-Authenticate")
	require.True(t, strings.HasPrefix(challenge, `Bearer realm="switchboard", resource_metadata=`), challenge)
	require.Contains(t, challenge, `error="invalid_token"`)

	resp = post("Bearer " + b.key)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("WWW-Authenticate"))
}
