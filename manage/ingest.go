package manage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/knowledge"
	"switchboard/netguard"
	"switchboard/store"
)

// newSources turns a blueprint's knowledge sources into the rows create_agent records, and
// refuses (nothing written) what cannot work: a URL the guard refuses, an upload_id that is
// not an upload of the workspace, a path that is not a relative file name. A file source
// whose path names no upload yet is recorded pending, with a warning: uploading a file of
// that name queues its ingestion (CreateUpload).
func (s *Service) newSources(ctx context.Context, ws uuid.UUID, bp *blueprint.Blueprint) ([]store.NewSource, []string, error) {
	if bp.Agent.KnowledgeBase == nil {
		return nil, nil, nil
	}
	var sources []store.NewSource
	var warnings []string
	for i, src := range bp.Agent.KnowledgeBase.Sources {
		at := fmt.Sprintf("agent.knowledge_base.sources[%d]", i)
		ns := store.NewSource{Type: string(src.Type), URL: src.URL, Status: SourcePending, Text: src.Text}
		switch src.Type {
		case blueprint.SourceWebsiteCrawl, blueprint.SourceAPI:
			if err := s.guard.CheckURL(ctx, src.URL); err != nil { // as crawl_website does
				return nil, nil, apierr.Invalid("yaml", "url_not_allowed", "%s.url: %s", at, strings.TrimPrefix(err.Error(), "address not allowed: "))
			}
			if src.Type == blueprint.SourceWebsiteCrawl {
				ns.Status = SourceQueued
				if src.Depth != nil {
					ns.Depth = *src.Depth
				}
			}
		case blueprint.SourceFileUpload, blueprint.SourceMarkdownFile:
			if src.UploadID != "" {
				u, err := s.store.UploadByShortID(ctx, ws, src.UploadID)
				if errors.Is(err, store.ErrNotFound) {
					return nil, nil, apierr.Invalid("yaml", "upload_not_found", "%s.upload_id: no upload %s in this workspace (POST /api/uploads answers the ids).", at, src.UploadID)
				}
				if err != nil {
					return nil, nil, err
				}
				ns.UploadID = &u.ID
				break
			}
			path, err := knowledge.CleanFilename(src.Path)
			if err != nil {
				return nil, nil, apierr.Invalid("yaml", "invalid_path", "%s.path: %v", at, err)
			}
			ns.Path = path
			u, err := s.store.UploadNamed(ctx, ws, path)
			switch {
			case errors.Is(err, store.ErrNotFound):
				warnings = append(warnings, fmt.Sprintf("%s: no file named %s is uploaded yet; the source stays pending until one is (POST /api/uploads?filename=%s)", at, path, path))
			case err != nil:
				return nil, nil, err
			default:
				ns.UploadID = &u.ID
			}
		}
		sources = append(sources, ns)
	}
	return sources, warnings, nil
}

// sourceJobs are the jobs of newly recorded sources: a crawl for each queued website, an
// ingestion for each pending source that has what it reads (a file source waiting for its
// upload has none yet).
func sourceJobs(ws uuid.UUID, created []store.Source) []river.InsertManyParams {
	var jobs []river.InsertManyParams
	for _, src := range created {
		switch {
		case src.Status == SourceQueued:
			jobs = append(jobs, river.InsertManyParams{Args: CrawlArgs{WorkspaceID: ws, SourceID: src.ID}})
		case src.Status == SourcePending && (src.UploadID != nil || src.Path == nil):
			jobs = append(jobs, river.InsertManyParams{Args: IngestArgs{WorkspaceID: ws, SourceID: src.ID}})
		}
	}
	return jobs
}

// IngestArgs is the durable job of reading one non-crawl knowledge source into the index.
type IngestArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	SourceID    uuid.UUID `json:"source_id"`
}

// Kind names the job type in the queue.
func (IngestArgs) Kind() string { return "ingest_knowledge_source" }

// InsertOpts retries, a couple of times, an ingestion that failed for a reason that may pass:
// the service's own (the database), or an api source's transient failure (no answer in
// time, 429, 5xx).
func (IngestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 3} }

// Ingester is the ingestion job's worker.
type Ingester struct {
	river.WorkerDefaults[IngestArgs]
	store   *store.Store
	fetcher knowledge.Fetcher
	log     *slog.Logger
}

// NewIngester returns the worker; api sources are fetched through the guard (its URL check,
// and its client, which refuses private addresses at dial time and follows no redirect).
func NewIngester(st *store.Store, guard netguard.Guard, log *slog.Logger) *Ingester {
	return &Ingester{store: st, log: log, fetcher: knowledge.Fetcher{Client: guard.Client(20 * time.Second), CheckURL: guard.CheckURL,
		MaxBytes: APISourceMaxBytes, Timeout: 20 * time.Second}}
}

// APISourceMaxBytes caps the answer of an api source.
const APISourceMaxBytes = 2 << 20

// Timeout bounds one ingestion.
func (w *Ingester) Timeout(*river.Job[IngestArgs]) time.Duration { return 2 * time.Minute }

// Work reads the source's document, replaces its chunks and marks it ready, in one
// transaction; a document that cannot be read marks it failed with the reason. A file
// source without its upload yet is left pending (its upload queues it again).
func (w *Ingester) Work(ctx context.Context, job *river.Job[IngestArgs]) error {
	a := job.Args
	src, err := w.store.SourceByID(ctx, a.WorkspaceID, a.SourceID)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(errors.New("source deleted"))
	}
	if err != nil {
		return err
	}
	if src.Status != SourcePending {
		return nil // already ingested (a retried job)
	}
	doc, url, err := w.read(ctx, src)
	if errors.Is(err, errNoUpload) {
		return river.JobCancel(err)
	}
	var fail *readError
	if errors.As(err, &fail) {
		msg := fail.Error()
		var transient *knowledge.TransientError
		if errors.As(err, &transient) && job.Attempt < job.MaxAttempts {
			// The source stays pending, saying why, and River tries again after a backoff.
			msg += " (trying again)"
			if err := w.store.SetSourceStatus(context.WithoutCancel(ctx), a.WorkspaceID, a.SourceID, SourcePending, &msg, 0); err != nil {
				return err
			}
			return fail
		}
		return w.store.SetSourceStatus(context.WithoutCancel(ctx), a.WorkspaceID, a.SourceID, SourceFailed, &msg, 0)
	}
	if err != nil {
		return err
	}
	var chunks []store.Chunk
	for _, text := range knowledge.Chunks(doc.Text) {
		chunks = append(chunks, store.Chunk{URL: url, Title: doc.Title, Content: text})
	}
	return w.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ReplaceChunks(ctx, a.WorkspaceID, a.SourceID); err != nil {
			return err
		}
		if err := tx.AddChunks(ctx, a.WorkspaceID, a.SourceID, chunks); err != nil {
			return err
		}
		return tx.SetSourceStatus(ctx, a.WorkspaceID, a.SourceID, SourceReady, nil, 1)
	})
}

// readError is a document that cannot be read: the source fails with it as its reason
// (after the job's last attempt, when the cause may pass).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

func (e *readError) Unwrap() error { return e.err }

var errNoUpload = errors.New("the source has no upload yet")

// read returns a source's document and the URL its chunks carry (an api source's; other
// types have none, their title names them).
func (w *Ingester) read(ctx context.Context, src store.Source) (knowledge.Document, string, error) {
	switch blueprint.SourceType(src.Type) {
	case blueprint.SourceManualText:
		text, err := w.store.SourceText(ctx, src.WorkspaceID, src.ID)
		if err != nil {
			return knowledge.Document{}, "", err
		}
		if strings.TrimSpace(text) == "" {
			return knowledge.Document{}, "", &readError{errors.New("the text is empty")}
		}
		return knowledge.Document{Title: "Manual text", Text: text}, "", nil
	case blueprint.SourceAPI:
		if src.URL == nil {
			return knowledge.Document{}, "", &readError{errors.New("the source has no url")}
		}
		doc, err := w.fetcher.Fetch(ctx, *src.URL)
		if err != nil {
			if ctx.Err() != nil {
				return knowledge.Document{}, "", ctx.Err()
			}
			reason := fmt.Errorf("fetching %s: %s", *src.URL, strings.TrimPrefix(err.Error(), "address not allowed: "))
			var transient *knowledge.TransientError
			if errors.As(err, &transient) {
				reason = &knowledge.TransientError{Err: reason}
			}
			return knowledge.Document{}, "", &readError{reason}
		}
		if doc.Title == "" {
			doc.Title = *src.URL
		}
		return doc, *src.URL, nil
	case blueprint.SourceFileUpload, blueprint.SourceMarkdownFile:
		if src.UploadID == nil {
			return knowledge.Document{}, "", errNoUpload
		}
		u, err := w.store.UploadByID(ctx, src.WorkspaceID, *src.UploadID)
		if err != nil {
			return knowledge.Document{}, "", err
		}
		contentType := u.ContentType
		if src.Type == string(blueprint.SourceMarkdownFile) {
			if contentType != knowledge.TextMarkdown && contentType != knowledge.TextPlain {
				return knowledge.Document{}, "", &readError{fmt.Errorf("%s (%s) is %s, not Markdown; name it in a file_upload source", u.Filename, u.ShortID, u.ContentType)}
			}
			contentType = knowledge.TextMarkdown
		}
		data, err := w.store.UploadContent(ctx, src.WorkspaceID, u.ID)
		if err != nil {
			return knowledge.Document{}, "", err
		}
		doc, err := knowledge.Extract(contentType, u.Filename, data)
		if err != nil {
			return knowledge.Document{}, "", &readError{fmt.Errorf("%s (%s): %w", u.Filename, u.ShortID, err)}
		}
		if doc.Title != u.Filename && doc.Title != pathBase(u.Filename) {
			doc.Title += " (" + u.Filename + ")"
		} else {
			doc.Title = u.Filename
		}
		return doc, "", nil
	}
	return knowledge.Document{}, "", &readError{fmt.Errorf("sources of type %s are not ingested by this job", src.Type)}
}

func pathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }
