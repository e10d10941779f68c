package server_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard"
	"switchboard/openapi"
)

// interfaceVersion is the spec's (v1-api.md, Notes): "the interface description version is
// 1.0.0".
const interfaceVersion = "1.0.0"

// entryHeading is a CHANGELOG entry: its date, then an optional title after a colon.
var entryHeading = regexp.MustCompile(`^## (\d{4}-\d{2}-\d{2})(: .+)?$`)

// TestChangelogIsServedAndVersionsTheContracts: /changelog needs no key, and the
// info.version of every OpenAPI document is the spec's interface description version.
func TestChangelogIsServedAndVersionsTheContracts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, body := b.do(t, http.MethodGet, "/changelog", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/markdown; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, switchboard.Changelog, body)

	for name, doc := range map[string][]byte{"v1.yaml": openapi.V1YAML, "api.yaml": openapi.APIYAML, "embed.yaml": openapi.EmbedYAML} {
		spec, err := openapi3.NewLoader().LoadFromData(doc)
		require.NoError(t, err)
		require.Equal(t, interfaceVersion, spec.Info.Version, "openapi/%s info.version is the spec's interface description version", name)
	}
	require.Contains(t, string(body), "## 2026-11-21: "+interfaceVersion+",", "the first entry names the version")
}

// The spec: additive changes are "recorded with dates" (issue 46: every entry has a date,
// none stays under "Unreleased" once on main). Every entry heading is `## YYYY-MM-DD`, newest
// first, and a change that can break a client carries a migration note.
func TestEveryChangelogEntryHasADate(t *testing.T) {
	t.Parallel()
	text := string(switchboard.Changelog)
	require.NotContains(t, strings.ToLower(text), "## [unreleased]")
	var dates []string
	for _, entry := range strings.Split(text, "\n## ")[1:] {
		heading, rest, _ := strings.Cut(entry, "\n")
		m := entryHeading.FindStringSubmatch("## " + heading)
		require.NotNil(t, m, "entry %q has no date: headings are ## YYYY-MM-DD[: title]", heading)
		dates = append(dates, m[1])
		if strings.Contains(heading, "can break a client") || strings.Contains(rest, "(can break a client)") {
			require.Contains(t, rest, "**Migration.**", "entry %q can break a client and needs a migration note", heading)
		}
	}
	require.NotEmpty(t, dates)
	for i := 1; i < len(dates); i++ {
		require.GreaterOrEqual(t, dates[i-1], dates[i], "entries are listed newest first")
	}
	require.Contains(t, text, "## 2026-11-23: key roles enforced (can break a client)", "role enforcement is a dated change")
}
