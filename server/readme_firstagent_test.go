package server_test

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/webchat"
)

const firstAgentHeading = "## Your first agent on a web page"

// readmeSection returns the `sh` blocks of the README section under heading, in order.
func readmeSection(t *testing.T, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(raw)
	start := strings.Index(text, "\n"+heading+"\n")
	require.NotEqual(t, -1, start, "the README has the section %q", heading)
	section := text[start+len(heading)+2:]
	if end := strings.Index(section, "\n## "); end != -1 {
		section = section[:end]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)\n```sh\n(.*?)\n```\n").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestReadmeFirstAgentOnAWebPage runs the README's "Your first agent on a web page" as a
// newcomer would under `make run` (development mode: no key), with bash and curl, against a
// test server: every block must succeed, and the page it writes must carry the snippet of
// the agent's webchat deployment, whose script serves the loader.
func TestReadmeFirstAgentOnAWebPage(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "grep", "cut"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	blocks := readmeSection(t, firstAgentHeading)
	require.GreaterOrEqual(t, len(blocks), 4, "create, deploy, test link, page")
	b := setup(t, func(o *setupOpts) { o.development = true })

	// The README speaks to http://localhost:8080; the test server's links are built on its
	// PUBLIC_BASE_URL, http://switchboard.test. curl reaches both at the test server (curlrc's
	// connect-to), so the commands run as written, the links the server answers included.
	const public = "http://switchboard.test"
	u, err := url.Parse(b.url)
	require.NoError(t, err)
	dir := t.TempDir()
	repo, err := filepath.Abs("..")
	require.NoError(t, err)
	require.NoError(t, os.Symlink(filepath.Join(repo, "testdata"), filepath.Join(dir, "testdata")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".curlrc"),
		[]byte("connect-to = switchboard.test:80:"+u.Host+"\nmax-time = 30\n"), 0o600))

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, block := range blocks {
		script.WriteString("echo '--- block " + string(rune('1'+i)) + "'\n")
		script.WriteString(strings.ReplaceAll(block, "http://localhost:8080", public) + "\n")
	}
	script.WriteString("echo \"AGENT=$AGENT\"\necho \"TEST_URL=$TEST_URL\"\necho \"EMBED_URL=$EMBED_URL\"\n")
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CURL_HOME="+dir, "HOME="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's commands fail (the last block started is the one):\n%s", out)

	vars := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && (k == "AGENT" || k == "TEST_URL" || k == "EMBED_URL") {
			vars[k] = v
		}
	}
	agent, err := uuid.Parse(vars["AGENT"])
	require.NoError(t, err, "the agent id is captured:\n%s", out)
	require.Equal(t, public+"/agents/"+agent.String()+"/test", vars["TEST_URL"])

	// The deployment the README made is the agent's webchat deployment, in the development
	// workspace; its snippet (as the list and the dashboard show it) is the line in the page.
	resp, raw := b.do(t, http.MethodGet, "/api/agents/"+agent.String()+"/deployments", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	list := decode[deploymentList](t, raw)
	require.Len(t, list.Deployments, 1)
	d := list.Deployments[0]
	require.Equal(t, "webchat", d.Channel)
	require.Equal(t, *d.EmbedURL, vars["EMBED_URL"])
	page, err := os.ReadFile(filepath.Join(dir, "first-agent.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), *d.EmbedSnippet)
	require.NotContains(t, string(page), "$EMBED_URL")

	for path, want := range map[string]string{
		strings.TrimPrefix(vars["TEST_URL"], public):  "text/html",
		strings.TrimPrefix(vars["EMBED_URL"], public): "text/javascript",
	} {
		resp, raw := b.do(t, http.MethodGet, path, "", "")
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, raw)
		require.Contains(t, resp.Header.Get("Content-Type"), want, path)
	}
	resp, raw = b.do(t, http.MethodGet, strings.TrimPrefix(vars["EMBED_URL"], public), "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, string(webchat.Loader(public, uuid.MustParse(d.DeploymentID))), string(raw), "the snippet's URL serves the loader")
}
