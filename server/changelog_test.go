package server_test

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard"
	"switchboard/openapi"
)

// TestChangelogIsServedAndVersionsTheContracts: /changelog needs no key, and the
// info.version of both OpenAPI documents is the latest released version of CHANGELOG.md.
func TestChangelogIsServedAndVersionsTheContracts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, body := b.do(t, http.MethodGet, "/changelog", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/markdown; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, switchboard.Changelog, body)

	releases := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$`).FindAllStringSubmatch(string(body), -1)
	require.NotEmpty(t, releases, "dated release headings: ## [1.2.3] - 2006-01-02")
	latest := releases[0][1]
	for name, doc := range map[string][]byte{"v1.yaml": openapi.V1YAML, "api.yaml": openapi.APIYAML} {
		spec, err := openapi3.NewLoader().LoadFromData(doc)
		require.NoError(t, err)
		require.Equal(t, latest, spec.Info.Version, "openapi/%s info.version is the latest release of CHANGELOG.md", name)
	}
	for i := 1; i < len(releases); i++ {
		require.GreaterOrEqual(t, releases[i-1][2], releases[i][2], "releases are listed newest first")
	}
}
