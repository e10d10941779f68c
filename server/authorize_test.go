package server

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard/gen/apiapi"
	"switchboard/gen/v1api"
)

// TestSpendingOperations: the operations marked x-spends in the published documents are
// those that run turns, by the routes the middleware sees.
func TestSpendingOperations(t *testing.T) {
	v1, err := v1api.GetSwagger()
	require.NoError(t, err)
	api, err := apiapi.GetSwagger()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, spec := range []*openapi3.T{v1, api} {
		spends, err := routeSpends(spec)
		require.NoError(t, err)
		for route := range spends {
			got[route] = true
		}
	}
	require.Equal(t, map[string]bool{"POST /v1/responses": true, "POST /v1/chat/completions": true,
		"POST /api/chat": true, "POST /api/agents/:id/chat": true}, got)
}

// TestSpendsMustBeBoolean: x-spends of another type stops the start; false is no spending.
func TestSpendsMustBeBoolean(t *testing.T) {
	spec, err := v1api.GetSwagger()
	require.NoError(t, err)
	op := spec.Paths.Find("/v1/responses").Post
	op.Extensions[spendsExtension] = "true"
	_, err = routeSpends(spec)
	require.ErrorContains(t, err, "x-spends must be true or false")

	op.Extensions[spendsExtension] = false
	spends, err := routeSpends(spec)
	require.NoError(t, err)
	require.False(t, spends["POST /v1/responses"])
	require.True(t, spends["POST /v1/chat/completions"])
}
