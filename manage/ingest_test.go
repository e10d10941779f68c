package manage_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/knowledge/knowledgetest"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
)

// FullBlueprintUpload is the upload_id that testdata/blueprints/valid/full.yaml names.
const fullBlueprintUpload = "upl_0123456789ABCDEFGHIJkl"

// seedUpload stores an upload with a given public id, as if POST /api/uploads had answered
// it (ids are random, so a blueprint on disk can only name one this way).
func seedUpload(t *testing.T, b *testBundle, ws uuid.UUID, shortID, filename, contentType, content string) {
	t.Helper()
	_, err := b.store.Pool().Exec(context.Background(), `INSERT INTO uploads (workspace_id, short_id, filename, content_type, bytes, sha256, content)
		VALUES ($1, $2, $3, $4, $5, '', $6)`, ws, shortID, filename, contentType, len(content), []byte(content))
	require.NoError(t, err)
}

// ingestJobs returns the args of the enqueued ingestion jobs, oldest first.
func (b *testBundle) ingestJobs(t *testing.T, want int) []manage.IngestArgs {
	t.Helper()
	if want == 0 {
		rivertest.RequireNotInserted(context.Background(), t, b.driver, manage.IngestArgs{}, nil)
		return nil
	}
	expected := make([]rivertest.ExpectedJob, want)
	for i := range expected {
		expected[i] = rivertest.ExpectedJob{Args: manage.IngestArgs{}, Opts: &rivertest.RequireInsertedOpts{MaxAttempts: 3}}
	}
	rows := rivertest.RequireManyInserted(context.Background(), t, b.driver, expected)
	out := make([]manage.IngestArgs, len(rows))
	for i, r := range rows {
		require.NoError(t, json.Unmarshal(r.EncodedArgs, &out[i]))
	}
	return out
}

// ingest works one ingestion job with River's test worker and returns the source after it.
func ingest(t *testing.T, b *testBundle, guard netguard.Guard, ws, sourceID uuid.UUID) (*rivertest.WorkResult, store.Source) {
	t.Helper()
	result, src, err := ingestJob(t, b, guard, ws, sourceID, nil)
	require.NoError(t, err)
	return result, src
}

// ingestJob is ingest with the job's insert options (MaxAttempts: 1 makes it the last
// attempt), returning the worker's error.
func ingestJob(t *testing.T, b *testBundle, guard netguard.Guard, ws, sourceID uuid.UUID, opts *river.InsertOpts) (*rivertest.WorkResult, store.Source, error) {
	t.Helper()
	ctx := context.Background()
	w := manage.NewIngester(b.store, guard, slog.New(slog.NewTextHandler(io.Discard, nil)))
	worker := rivertest.NewWorker(t, riverpgxv5.New(b.store.Pool()), &river.Config{}, river.Worker[manage.IngestArgs](w))
	tx, err := b.store.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }() // each job in a transaction of its own
	result, workErr := worker.Work(ctx, t, tx, manage.IngestArgs{WorkspaceID: ws, SourceID: sourceID}, opts)
	src, err := b.store.SourceByID(ctx, ws, sourceID)
	require.NoError(t, err)
	return result, src, workErr
}

func withSources(name, sources string) string {
	return agentYAML(name) + "  knowledge_base:\n    sources:\n" + sources
}

func sourcesOf(t *testing.T, b *testBundle, agentID string) []store.Source {
	t.Helper()
	list, err := b.store.AgentSources(context.Background(), b.ws, mustUUID(t, agentID))
	require.NoError(t, err)
	return list
}

// search is what the runtime's search_knowledge_base tool reads.
func search(t *testing.T, b *testBundle, agentID, query string) []store.Chunk {
	t.Helper()
	chunks, err := b.store.SearchKnowledge(context.Background(), b.ws, mustUUID(t, agentID), query, 5)
	require.NoError(t, err)
	return chunks
}

func TestIngestEverySourceType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"faq":[{"question":"Do you deliver on weekends?","answer":"Saturday deliveries cost 5 euros."}]}`)
	}))
	t.Cleanup(api.Close)
	pdf := string(knowledgetest.PDF("Size guide", []string{"Shoes run half a size small.", "Order one size up."}))
	seedUpload(t, b, b.ws, "upl_PdfPdfPdfPdfPdfPdfPdf1", "uploads/size-guide.pdf", "application/pdf", pdf)
	seedUpload(t, b, b.ws, "upl_HtmlHtmlHtmlHtmlHtml12", "pages/warranty.html", "text/html",
		`<html><head><title>Warranty</title></head><body><p>Every bicycle frame has a lifetime warranty.</p></body></html>`)
	seedUpload(t, b, b.ws, "upl_MdMdMdMdMdMdMdMdMdMdMd", "kb/returns-policy.md", "text/markdown",
		"# Returns\n\nUnworn items can be returned within **30 days**.")

	res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Everything", `      - type: manual_text
        text: The shop opens at nine and closes at six; on Sundays it is closed.
      - type: markdown_file
        path: ./kb/returns-policy.md
      - type: file_upload
        upload_id: upl_PdfPdfPdfPdfPdfPdfPdf1
      - type: file_upload
        path: pages/warranty.html
      - type: api
        url: `+api.URL+`/faq.json
`)})
	require.NoError(t, err)
	require.Empty(t, res.Warnings)
	sources := sourcesOf(t, b, res.AgentID)
	require.Len(t, sources, 5)
	jobs := b.ingestJobs(t, 5)
	for i, src := range sources {
		require.Equal(t, "pending", src.Status, src.Type)
		require.Equal(t, manage.IngestArgs{WorkspaceID: b.ws, SourceID: src.ID}, jobs[i])
	}
	require.Equal(t, "kb/returns-policy.md", *sources[1].Path, "the path is kept as the upload is named")
	b.crawlJobs(t, 0)

	for _, src := range sources {
		result, after := ingest(t, b, netguard.Guard{AllowPrivate: true}, b.ws, src.ID)
		require.Equal(t, river.EventKindJobCompleted, result.EventKind)
		require.Equal(t, "ready", after.Status, "%s: %v", src.Type, after.Error)
		require.Nil(t, after.Error)
		require.Equal(t, 1, after.Pages)
	}
	for query, want := range map[string]string{
		"sundays closed":      "Manual text",
		"returned unworn":     "Returns (kb/returns-policy.md)",
		"shoes size":          "Size guide (uploads/size-guide.pdf)",
		"lifetime warranty":   "Warranty (pages/warranty.html)",
		"saturday deliveries": api.URL + "/faq.json",
	} {
		found := search(t, b, res.AgentID, query)
		require.NotEmpty(t, found, query)
		require.Equal(t, want, found[0].Title, query)
	}
	found := search(t, b, res.AgentID, "saturday deliveries")
	require.Equal(t, api.URL+"/faq.json", found[0].URL, "an api source's chunks carry its URL")
	require.Contains(t, found[0].Content, "faq[0].answer: Saturday deliveries cost 5 euros.")
	require.Empty(t, search(t, b, res.AgentID, "lifetime")[0].URL, "an upload has no URL; its title names it")

	view, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: res.AgentID})
	require.NoError(t, err)
	require.Equal(t, "upl_PdfPdfPdfPdfPdfPdfPdf1", *view.Agent.KnowledgeSources[2].UploadID)
	require.Equal(t, "upl_HtmlHtmlHtmlHtmlHtml12", *view.Agent.KnowledgeSources[3].UploadID)
	require.Equal(t, "pages/warranty.html", *view.Agent.KnowledgeSources[3].Path)
}

func TestIngestRecordsWhyASourceFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/image" {
			w.Header().Set("Content-Type", "image/png")
			_, _ = io.WriteString(w, "\x89PNG")
			return
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(api.Close)
	seedUpload(t, b, b.ws, "upl_ScanScanScanScanScan12", "scan.pdf", "application/pdf", string(knowledgetest.PDF("Scan", []string{})))
	seedUpload(t, b, b.ws, "upl_GuideGuideGuideGuide12", "guide.pdf", "application/pdf", string(knowledgetest.PDF("Guide", []string{"Text"})))
	res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Failing", `      - type: api
        url: `+api.URL+`/faq
      - type: api
        url: `+api.URL+`/image
      - type: file_upload
        upload_id: upl_ScanScanScanScanScan12
      - type: markdown_file
        path: guide.pdf
`)})
	require.NoError(t, err)
	sources := sourcesOf(t, b, res.AgentID)
	// A 503 may pass: the source stays pending, saying why, and River tries again; the last
	// attempt fails it.
	result, after, err := ingestJob(t, b, netguard.Guard{AllowPrivate: true}, b.ws, sources[0].ID, nil)
	require.Error(t, err)
	require.Equal(t, river.EventKindJobFailed, result.EventKind)
	require.Equal(t, "pending", after.Status)
	require.Equal(t, "fetching "+api.URL+"/faq: the URL answered HTTP 503 (trying again)", *after.Error)
	_, after, err = ingestJob(t, b, netguard.Guard{AllowPrivate: true}, b.ws, sources[0].ID, &river.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	require.Equal(t, "failed", after.Status)
	require.Equal(t, "fetching "+api.URL+"/faq: the URL answered HTTP 503", *after.Error)

	want := []string{"image/png", "no extractable text", "guide.pdf (upl_GuideGuideGuideGuide12) is application/pdf, not Markdown"}
	for i, src := range sources[1:] {
		result, after := ingest(t, b, netguard.Guard{AllowPrivate: true}, b.ws, src.ID)
		require.Equal(t, river.EventKindJobCompleted, result.EventKind, "the failure is the source's, recorded; the job is done")
		require.Equal(t, "failed", after.Status)
		require.NotNil(t, after.Error)
		require.Contains(t, *after.Error, want[i])
	}
	require.Zero(t, b.count(t, "knowledge_chunks"))
}

// An api source is checked by the guard when the agent is created (as website_crawl is),
// and again by the job, whose client refuses private addresses at dial time too.
func TestAPISourcesCannotReachPrivateAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	hits := 0
	api := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	t.Cleanup(api.Close)
	strict := manage.New(b.store, catalog.Default(), netguard.Guard{}, nil, publicURL) // production's guard
	for _, u := range []string{api.URL + "/faq", "https://127.0.0.1/faq", "https://169.254.169.254/latest/meta-data/", "https://[::1]/", "https://10.0.0.1/"} {
		_, err := strict.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Private", "      - type: api\n        url: \""+u+"\"\n")})
		e := requireAPIError(t, err, apierr.KindInvalid, "url_not_allowed", "yaml")
		require.Contains(t, e.Message, "agent.knowledge_base.sources[0].url", u)
	}
	require.Zero(t, b.count(t, "agents"))

	// Recorded while private addresses were allowed, ingested after they no longer are.
	res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Later", "      - type: api\n        url: "+api.URL+"/faq\n")})
	require.NoError(t, err)
	_, src := ingest(t, b, netguard.Guard{}, b.ws, sourcesOf(t, b, res.AgentID)[0].ID)
	require.Equal(t, "failed", src.Status)
	require.Contains(t, *src.Error, "must use https")
	require.Zero(t, hits)
}

func TestFileSourcesWaitForTheirUpload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Waiting", `      - type: markdown_file
        path: kb/faq.md
      - type: file_upload
        path: kb\faq.md
`)})
	require.NoError(t, err)
	require.Len(t, res.Warnings, 2)
	require.Contains(t, res.Warnings[0], "agent.knowledge_base.sources[0]: no file named kb/faq.md is uploaded yet")
	b.ingestJobs(t, 0)
	sources := sourcesOf(t, b, res.AgentID)
	for _, src := range sources {
		require.Equal(t, "pending", src.Status)
		require.Nil(t, src.UploadID)
		result, _ := ingest(t, b, netguard.Guard{AllowPrivate: true}, b.ws, src.ID)
		require.Equal(t, river.EventKindJobCancelled, result.EventKind, "nothing to read yet")
	}

	// Another workspace's file of that name does not count.
	_, err = svc.CreateUpload(ctx, b.other, manage.UploadInput{Filename: "kb/faq.md", ContentType: "text/markdown", Data: []byte("# Theirs")})
	require.NoError(t, err)
	b.ingestJobs(t, 0)

	up, err := svc.CreateUpload(ctx, b.ws, manage.UploadInput{Filename: "kb/faq.md", ContentType: "application/octet-stream",
		Data: []byte("# FAQ\n\nThe wifi password is on the receipt.")})
	require.NoError(t, err)
	require.Equal(t, "text/markdown", up.ContentType)
	require.ElementsMatch(t, []string{sources[0].ID.String(), sources[1].ID.String()}, up.QueuedSources)
	jobs := b.ingestJobs(t, 2)
	for _, j := range jobs {
		require.Equal(t, b.ws, j.WorkspaceID)
		_, src := ingest(t, b, netguard.Guard{AllowPrivate: true}, b.ws, j.SourceID)
		require.Equal(t, "ready", src.Status, src.Error)
		require.Equal(t, up.ID, *src.UploadShortID)
	}
	require.Len(t, search(t, b, res.AgentID, "wifi password"), 2)

	// A later upload of the same name does not change sources that already read one.
	again, err := svc.CreateUpload(ctx, b.ws, manage.UploadInput{Filename: "kb/faq.md", ContentType: "text/markdown", Data: []byte("new")})
	require.NoError(t, err)
	require.Empty(t, again.QueuedSources)
}

func TestCreateAgentRefusesAnUnknownUpload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	seedUpload(t, b, b.other, fullBlueprintUpload, "theirs.txt", "text/plain", "not yours")
	_, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Unknown", "      - type: file_upload\n        upload_id: "+fullBlueprintUpload+"\n")})
	e := requireAPIError(t, err, apierr.KindInvalid, "upload_not_found", "yaml")
	require.Contains(t, e.Message, "agent.knowledge_base.sources[0].upload_id")
	_, err = svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: withSources("Climbing", "      - type: markdown_file\n        path: ../secrets.md\n")})
	e = requireAPIError(t, err, apierr.KindInvalid, "invalid_path", "yaml")
	require.Contains(t, e.Message, "agent.knowledge_base.sources[0].path")
	require.Zero(t, b.count(t, "agents"))
	require.Zero(t, b.count(t, "knowledge_sources"))
}

func TestCreateUploadRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	for _, tc := range []struct {
		in          manage.UploadInput
		kind        apierr.Kind
		code, param string
	}{
		{manage.UploadInput{Filename: "logo.png", ContentType: "image/png", Data: []byte("x")}, apierr.KindUnsupportedMediaType, "unsupported_media_type", "Content-Type"},
		{manage.UploadInput{Filename: "kb.zip", ContentType: "application/octet-stream", Data: []byte("x")}, apierr.KindUnsupportedMediaType, "unsupported_media_type", "Content-Type"},
		{manage.UploadInput{Filename: "big.txt", ContentType: "text/plain", TooLarge: true}, apierr.KindTooLarge, "upload_too_large", "file"},
		{manage.UploadInput{Filename: "big.txt", ContentType: "text/plain", Data: make([]byte, manage.MaxUploadBytes+1)}, apierr.KindTooLarge, "upload_too_large", "file"},
		{manage.UploadInput{Filename: "empty.txt", ContentType: "text/plain"}, apierr.KindInvalid, "empty_file", "file"},
		{manage.UploadInput{Filename: "fake.pdf", ContentType: "application/pdf", Data: []byte("hello")}, apierr.KindInvalid, "invalid_pdf", "file"},
		{manage.UploadInput{Filename: "latin1.txt", ContentType: "text/plain", Data: []byte("caf\xe9")}, apierr.KindInvalid, "invalid_encoding", "file"},
		{manage.UploadInput{Filename: "../up.txt", ContentType: "text/plain", Data: []byte("x")}, apierr.KindInvalid, "invalid_filename", "filename"},
		{manage.UploadInput{Filename: " ", ContentType: "text/plain", Data: []byte("x")}, apierr.KindInvalid, "invalid_filename", "filename"},
	} {
		_, err := svc.CreateUpload(ctx, b.ws, tc.in)
		requireAPIError(t, err, tc.kind, tc.code, tc.param)
	}
	require.Zero(t, b.count(t, "uploads"))

	up, err := svc.CreateUpload(ctx, b.ws, manage.UploadInput{Filename: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("hello")})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(up.ID, "upl_"))
	require.Equal(t, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", up.SHA256)
	got, err := svc.GetUpload(ctx, b.ws, up.ID)
	require.NoError(t, err)
	require.Equal(t, up.ID, got.ID)
	_, err = svc.GetUpload(ctx, b.other, up.ID)
	requireAPIError(t, err, apierr.KindNotFound, "upload_not_found", "id")
}
