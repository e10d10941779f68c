package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"switchboard/knowledge"
	"switchboard/knowledge/knowledgetest"
	"switchboard/manage"
	"switchboard/openapi"
	"switchboard/store"
)

// seedBlueprintUploads stores the upload that testdata/blueprints/valid/full.yaml names by
// id (ids are random, so a blueprint on disk can only name one this way).
func (b *testBundle) seedBlueprintUploads(t *testing.T) {
	t.Helper()
	_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO uploads (workspace_id, short_id, filename, content_type, bytes, sha256, content)
		VALUES ($1, 'upl_0123456789ABCDEFGHIJkl', 'uploads/catalogue.txt', 'text/plain', 9, '', 'Catalogue')`, b.workspace.ID)
	require.NoError(t, err)
}

type upload struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	Filename      string   `json:"filename"`
	ContentType   string   `json:"contentType"`
	Bytes         int      `json:"bytes"`
	SHA256        string   `json:"sha256"`
	QueuedSources []string `json:"queuedSources"`
}

// postFile sends a raw upload body.
func (b *testBundle) postFile(t *testing.T, query, contentType string, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.url+"/api/uploads"+query, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	return resp, readAll(t, resp)
}

// postMultipart sends a file as curl -F file=@name does; partType "" sends no part type.
func (b *testBundle) postMultipart(t *testing.T, filename, partType string, data []byte) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	require.NoError(t, w.WriteField("purpose", "knowledge"))
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+filename+`"`)
	if partType != "" {
		h.Set("Content-Type", partType)
	}
	part, err := w.CreatePart(h)
	require.NoError(t, err)
	_, err = part.Write(data)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.postFile(t, "", w.FormDataContentType(), body.Bytes())
}

func (b *testBundle) uploadMultipart(t *testing.T, filename, partType string, data []byte) upload {
	t.Helper()
	resp, raw := b.postMultipart(t, filename, partType, data)
	return decodeUpload(t, resp, raw)
}

func (b *testBundle) uploadFile(t *testing.T, query, contentType string, body []byte) upload {
	t.Helper()
	resp, raw := b.postFile(t, query, contentType, body)
	return decodeUpload(t, resp, raw)
}

func decodeUpload(t *testing.T, resp *http.Response, raw []byte) upload {
	t.Helper()
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var u upload
	require.NoError(t, json.Unmarshal(raw, &u))
	return u
}

func TestUploads(t *testing.T) {
	t.Parallel()
	b := setup(t)

	u := b.uploadMultipart(t, "kb/faq.md", "", []byte("# FAQ\n\nWe open at nine."))
	require.True(t, strings.HasPrefix(u.ID, "upl_"), u.ID)
	require.Equal(t, upload{ID: u.ID, Object: "upload", Filename: "kb/faq.md", ContentType: "text/markdown", Bytes: 23,
		SHA256: u.SHA256, QueuedSources: []string{}}, u)
	pdf := b.uploadMultipart(t, "Size Guide.pdf", "application/pdf", knowledgetest.PDF("Sizes", []string{"Shoes run small."}))
	require.Equal(t, "application/pdf", pdf.ContentType)
	raw := b.uploadFile(t, "?filename=pages/warranty.html", "text/html; charset=utf-8", []byte("<p>Lifetime warranty.</p>"))
	require.Equal(t, "pages/warranty.html", raw.Filename)
	require.Equal(t, "text/html", raw.ContentType)

	resp, body := b.get(t, "/api/uploads/"+u.ID)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var got upload
	require.NoError(t, json.Unmarshal(body, &got))
	require.Equal(t, u.SHA256, got.SHA256)

	other := b.newKey(t, mustWorkspace(t, b, "globex"), "owner")
	resp, body = b.do(t, http.MethodGet, "/api/uploads/"+u.ID, "Bearer "+other, "")
	e := errorOf(t, resp, body, http.StatusNotFound)
	require.Equal(t, "upload_not_found", str(e.Code))
	resp, body = b.get(t, "/api/uploads/upl_nope")
	require.Equal(t, "upload_not_found", str(errorOf(t, resp, body, http.StatusNotFound).Code))
	require.Equal(t, 3, b.count(t, "uploads"))
}

func mustWorkspace(t *testing.T, b *testBundle, name string) store.Workspace {
	t.Helper()
	w, err := b.store.CreateWorkspace(context.Background(), name, 1_000_000_000)
	require.NoError(t, err)
	return w
}

func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := bytes.Repeat([]byte("a"), manage.MaxUploadBytes+1)
	for _, tc := range []struct {
		name          string
		send          func() (*http.Response, []byte)
		status        int
		code, param   string
		messageSaying string
	}{
		{"oversize raw", func() (*http.Response, []byte) { return b.postFile(t, "?filename=big.txt", "text/plain", big) },
			http.StatusRequestEntityTooLarge, "upload_too_large", "file", "10 MiB"},
		{"oversize multipart", func() (*http.Response, []byte) { return b.postMultipart(t, "big.md", "text/markdown", big) },
			http.StatusRequestEntityTooLarge, "upload_too_large", "file", "10 MiB"},
		{"image", func() (*http.Response, []byte) {
			return b.postFile(t, "?filename=logo.png", "image/png", []byte("\x89PNG"))
		},
			http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type", "text/markdown"},
		{"zip part", func() (*http.Response, []byte) { return b.postMultipart(t, "kb.zip", "", []byte("PK")) },
			http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type", ".pdf"},
		{"JSON", func() (*http.Response, []byte) {
			return b.postFile(t, "?filename=a.json", "application/json", []byte(`{"a":1}`))
		}, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type", "application/json"},
		{"no name", func() (*http.Response, []byte) { return b.postFile(t, "", "text/plain", []byte("hi")) },
			http.StatusBadRequest, "missing_filename", "filename", "filename"},
		{"climbing name", func() (*http.Response, []byte) {
			return b.postFile(t, "?filename=../x.txt", "text/plain", []byte("hi"))
		},
			http.StatusBadRequest, "invalid_filename", "filename", ".."},
		{"empty", func() (*http.Response, []byte) { return b.postFile(t, "?filename=empty.txt", "text/plain", nil) },
			http.StatusBadRequest, "empty_file", "file", "empty"},
		{"not a PDF", func() (*http.Response, []byte) {
			return b.postMultipart(t, "fake.pdf", "application/pdf", []byte("hello"))
		},
			http.StatusBadRequest, "invalid_pdf", "file", "not a PDF"},
		{"not UTF-8", func() (*http.Response, []byte) {
			return b.postFile(t, "?filename=l1.txt", "text/plain", []byte("caf\xe9"))
		},
			http.StatusBadRequest, "invalid_encoding", "file", "UTF-8"},
		{"no file part", func() (*http.Response, []byte) {
			var body bytes.Buffer
			w := multipart.NewWriter(&body)
			require.NoError(t, w.WriteField("note", "no file"))
			require.NoError(t, w.Close())
			return b.postFile(t, "", w.FormDataContentType(), body.Bytes())
		}, http.StatusBadRequest, "missing_file", "file", "file"},
	} {
		resp, body := tc.send()
		e := errorOf(t, resp, body, tc.status)
		require.Equal(t, tc.code, str(e.Code), tc.name)
		require.Equal(t, tc.param, str(e.Param), tc.name)
		require.Contains(t, e.Message, tc.messageSaying, tc.name)
	}
	require.Zero(t, b.count(t, "uploads"))

	// The other /api routes keep their 1 MiB JSON limit.
	resp, body := b.do(t, http.MethodPost, "/api/agents", "Bearer "+b.key, `{"yaml":"`+strings.Repeat("a", 2<<20)+`"}`)
	require.Equal(t, "request_too_large", str(errorOf(t, resp, body, http.StatusRequestEntityTooLarge).Code))
}

// getSources reads an agent's knowledge sources through GET /api/agents/{id}.
func (b *testBundle) getSources(t *testing.T, agentID string) []map[string]any {
	t.Helper()
	resp, raw := b.get(t, "/api/agents/"+agentID)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var got struct {
		Agent struct {
			KnowledgeSources []map[string]any `json:"knowledgeSources"`
		} `json:"agent"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	return got.Agent.KnowledgeSources
}

// waitSettled waits (the job queue works in the background) until every source of the agent
// is ready or failed, or waits for an upload (pending, with a path and no upload), and
// returns them.
func (b *testBundle) waitSettled(t *testing.T, agentID string) []map[string]any {
	t.Helper()
	var sources []map[string]any
	require.Eventually(t, func() bool {
		sources = b.getSources(t, agentID)
		for _, s := range sources {
			waiting := s["status"] == "pending" && s["path"] != nil && s["uploadId"] == nil
			if !waiting && (s["status"] == "pending" || s["status"] == "queued" || s["status"] == "crawling") {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	return sources
}

func (b *testBundle) createAgentFromYAML(t *testing.T, yaml string) (id string, warnings []string) {
	t.Helper()
	resp, raw := b.postYAML(t, "/api/agents", yaml)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var created struct {
		AgentID  string   `json:"agentId"`
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal(raw, &created))
	return created.AgentID, created.Warnings
}

// The bakery blueprint's manual_text answers its questions once ingested: the search the
// runtime's search_knowledge_base tool makes finds them.
func TestManualTextBlueprintIsSearchable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	yaml, err := os.ReadFile("../testdata/blueprints/valid/bakery-manual-text.yaml")
	require.NoError(t, err)
	id, warnings := b.createAgentFromYAML(t, string(yaml))
	require.Empty(t, warnings)
	sources := b.getSources(t, id)
	require.Len(t, sources, 1)
	require.Contains(t, []any{"pending", "ready"}, sources[0]["status"], "pending until the job ran")
	sources = b.waitSettled(t, id)
	require.Equal(t, "ready", sources[0]["status"], sources[0]["error"])
	require.Equal(t, float64(1), sources[0]["pages"])

	for query, want := range map[string]string{
		"opening hours":       "open Tuesday to Saturday from 7:00 to 15:00",
		"closed mondays":      "closed on Mondays",
		"refund custom cakes": "cancelled at least 48 hours before pickup",
	} {
		chunks, err := b.store.SearchKnowledge(context.Background(), b.workspace.ID, mustUUID(t, id), query, 3)
		require.NoError(t, err)
		require.NotEmpty(t, chunks, query)
		require.Contains(t, strings.Join(strings.Fields(chunks[0].Content), " "), want, query)
		require.Equal(t, "Manual text", chunks[0].Title)
	}
}

// Every source type through the HTTP API: files uploaded before (by id and by path) and
// after (the waiting source) the agent, an api source on a local server, and a failure
// with its reason.
func TestEverySourceTypeThroughTheAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"parking":{"price":"Parking is free for customers after 6pm."}}`)
	}))
	t.Cleanup(api.Close)
	pdf := b.uploadMultipart(t, "size-guide.pdf", "application/pdf",
		knowledgetest.PDF("Size guide", []string{"Shoes run half a size small.", "Order one size up."}))
	b.uploadFile(t, "?filename=pages/warranty.html", "text/html", []byte("<title>Warranty</title><p>Frames carry a lifetime warranty.</p>"))

	id, warnings := b.createAgentFromYAML(t, agentYAML("Everything")+`  knowledge_base:
    sources:
      - type: manual_text
        text: Gift cards never expire.
      - type: file_upload
        upload_id: `+pdf.ID+`
      - type: file_upload
        path: pages/warranty.html
      - type: markdown_file
        path: kb/returns.md
      - type: api
        url: `+api.URL+`/info.json
      - type: api
        url: `+api.URL+`/gone
`)
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], "agent.knowledge_base.sources[3]: no file named kb/returns.md is uploaded yet")
	sources := b.waitSettled(t, id)
	var statuses []any
	for _, s := range sources {
		statuses = append(statuses, s["status"])
	}
	require.Equal(t, []any{"ready", "ready", "ready", "pending", "ready", "failed"}, statuses, "%v", sources)
	require.Equal(t, pdf.ID, sources[1]["uploadId"])
	require.Equal(t, "kb/returns.md", sources[3]["path"])
	require.Nil(t, sources[3]["uploadId"])
	require.Contains(t, sources[5]["error"], "HTTP 404")

	// The Markdown file arrives: the waiting source is queued in the upload's transaction.
	u := b.uploadMultipart(t, "kb/returns.md", "text/markdown", []byte("## Returns\n\nUnworn shoes can be returned within 30 days."))
	require.Equal(t, []string{sources[3]["id"].(string)}, u.QueuedSources)
	require.Eventually(t, func() bool { return b.getSources(t, id)[3]["status"] == "ready" }, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, u.ID, b.getSources(t, id)[3]["uploadId"])

	for query, title := range map[string]string{
		"gift cards expire": "Manual text",
		"shoes size small":  "Size guide (size-guide.pdf)",
		"lifetime warranty": "Warranty (pages/warranty.html)",
		"unworn returned":   "Returns (kb/returns.md)",
		"parking free":      api.URL + "/info.json",
	} {
		chunks, err := b.store.SearchKnowledge(context.Background(), b.workspace.ID, mustUUID(t, id), query, 3)
		require.NoError(t, err)
		require.NotEmpty(t, chunks, query)
		require.Equal(t, title, chunks[0].Title, query)
	}
}

// The api source guard at creation, through the HTTP API, with WEBHOOK_ALLOW_PRIVATE off.
func TestAPISourceToAPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *setupOpts) { o.allowPrivate = false })
	resp, raw := b.postYAML(t, "/api/agents", agentYAML("Private")+"  knowledge_base:\n    sources:\n      - type: api\n        url: https://169.254.169.254/latest/meta-data/\n")
	e := errorOf(t, resp, raw, http.StatusBadRequest)
	require.Equal(t, "url_not_allowed", str(e.Code))
	require.Contains(t, e.Message, "agent.knowledge_base.sources[0].url")
	require.Zero(t, b.count(t, "agents"))
}

func TestUploadContractEnumEqualsTheGoList(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.APIYAML)
	require.NoError(t, err)
	var got []string
	for _, v := range doc.Components.Schemas["Upload"].Value.Properties["contentType"].Value.Enum {
		got = append(got, v.(string))
	}
	require.Equal(t, knowledge.ContentTypes(), got)
}
