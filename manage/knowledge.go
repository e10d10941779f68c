package manage

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/crawl"
	"switchboard/netguard"
	"switchboard/store"
)

// CrawlWebsiteInput is crawl_website's input.
type CrawlWebsiteInput struct {
	AgentID string `json:"agent_id" jsonschema:"format=uuid" jsonschema_description:"The agent's id."`
	URL     string `json:"url" jsonschema:"format=uri" jsonschema_description:"A public https address"`
	Depth   *int   `json:"depth,omitempty" jsonschema:"minimum=1,maximum=5,default=2"`
}

// CrawlWebsiteResult is crawl_website's result.
type CrawlWebsiteResult struct {
	Success         bool   `json:"success"`
	KnowledgeBaseID string `json:"knowledgeBaseId"`
	SourceID        string `json:"sourceId"`
	URL             string `json:"url"`
	Status          string `json:"status"`
	Message         string `json:"message"`
}

// CrawlWebsite records a website source and queues its crawl, in one transaction.
func (s *Service) CrawlWebsite(ctx context.Context, ws uuid.UUID, in CrawlWebsiteInput) (CrawlWebsiteResult, error) {
	depth := 2
	if in.Depth != nil {
		depth = *in.Depth
	}
	if depth < 1 || depth > 5 {
		return CrawlWebsiteResult{}, apierr.Invalid("depth", "invalid_value", "depth must be between 1 and 5.")
	}
	if err := s.guard.CheckURL(ctx, in.URL); err != nil {
		return CrawlWebsiteResult{}, apierr.Invalid("url", "url_not_allowed", "%s", strings.TrimPrefix(err.Error(), "address not allowed: "))
	}
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	kb, err := s.store.KnowledgeBaseOf(ctx, ws, a.ID)
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	var src store.Source
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if src, err = tx.AddSource(ctx, ws, kb, store.NewSource{Type: string(blueprint.SourceWebsiteCrawl), URL: in.URL, Depth: depth, Status: SourceQueued}); err != nil {
			return err
		}
		_, err := s.jobs.InsertTx(ctx, tx.Pgx(), CrawlArgs{WorkspaceID: ws, SourceID: src.ID}, nil)
		return err
	})
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	return CrawlWebsiteResult{Success: true, KnowledgeBaseID: kb.String(), SourceID: src.ID.String(), URL: in.URL, Status: SourceQueued,
		Message: "The crawl is queued: it fetches pages of the same site breadth-first to depth " + itoa(depth) +
			" and stores their text in the agent's knowledge base; get_agent shows the source's status."}, nil
}

// RecrawlSource crawls a website source of an agent again, at its address and depth. The same
// source goes back to queued and the crawl replaces its pages (the worker replaces a
// source's chunks), rather than a second source beside the first.
func (s *Service) RecrawlSource(ctx context.Context, ws uuid.UUID, agentID, sourceID string) (CrawlWebsiteResult, error) {
	a, err := s.agent(ctx, ws, "agent_id", agentID)
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	kb, err := s.store.KnowledgeBaseOf(ctx, ws, a.ID)
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	src, err := s.websiteSource(ctx, ws, kb, sourceID)
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	if err := s.guard.CheckURL(ctx, *src.URL); err != nil {
		return CrawlWebsiteResult{}, apierr.Invalid("url", "url_not_allowed", "%s", strings.TrimPrefix(err.Error(), "address not allowed: "))
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetSourceStatus(ctx, ws, src.ID, SourceQueued, nil, src.Pages); err != nil {
			return err
		}
		_, err := s.jobs.InsertTx(ctx, tx.Pgx(), CrawlArgs{WorkspaceID: ws, SourceID: src.ID}, nil)
		return err
	})
	if err != nil {
		return CrawlWebsiteResult{}, err
	}
	return CrawlWebsiteResult{Success: true, KnowledgeBaseID: kb.String(), SourceID: src.ID.String(), URL: *src.URL, Status: SourceQueued,
		Message: "The crawl of " + *src.URL + " is queued again: its pages are replaced when it has run."}, nil
}

// websiteSource is a website source of the knowledge base kb, or 404 source_not_found.
func (s *Service) websiteSource(ctx context.Context, ws, kb uuid.UUID, ref string) (store.Source, error) {
	notFound := apierr.NotFound("source", "source_not_found", "The agent has no website source with that id.")
	id, err := uuid.Parse(ref)
	if err != nil {
		return store.Source{}, notFound
	}
	src, err := s.store.SourceByID(ctx, ws, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (src.KnowledgeBaseID != kb || src.Type != string(blueprint.SourceWebsiteCrawl) || src.URL == nil) {
		return store.Source{}, notFound
	}
	return src, err
}

func itoa(n int) string { return strconv.Itoa(n) }

// CrawlArgs is the durable job of crawling one website source.
type CrawlArgs struct {
	WorkspaceID uuid.UUID `json:"workspace_id"`
	SourceID    uuid.UUID `json:"source_id"`
}

// Kind names the job type in the queue.
func (CrawlArgs) Kind() string { return "crawl_website" }

// InsertOpts retries a crawl that failed as a whole a couple of times.
func (CrawlArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 3} }

// Crawler is the crawl job's worker.
type Crawler struct {
	river.WorkerDefaults[CrawlArgs]
	store    *store.Store
	guard    netguard.Guard
	client   *http.Client
	maxPages int
	log      *slog.Logger
}

// NewCrawler returns the worker; its requests go through the guard's client.
func NewCrawler(st *store.Store, guard netguard.Guard, log *slog.Logger) *Crawler {
	return &Crawler{store: st, guard: guard, client: guard.Client(20 * time.Second), maxPages: 50, log: log}
}

// Timeout bounds one crawl.
func (c *Crawler) Timeout(*river.Job[CrawlArgs]) time.Duration { return 10 * time.Minute }

// Work crawls the source: queued → crawling → ready (or failed), storing text chunks.
func (c *Crawler) Work(ctx context.Context, job *river.Job[CrawlArgs]) error {
	a := job.Args
	src, err := c.store.SourceByID(ctx, a.WorkspaceID, a.SourceID)
	if errors.Is(err, store.ErrNotFound) {
		return river.JobCancel(errors.New("source deleted"))
	}
	if err != nil {
		return err
	}
	if src.URL == nil {
		return river.JobCancel(errors.New("source has no url"))
	}
	depth := 2
	if src.Depth != nil {
		depth = *src.Depth
	}
	if err := c.store.SetSourceStatus(ctx, a.WorkspaceID, a.SourceID, SourceCrawling, nil, 0); err != nil {
		return err
	}
	if err := c.store.ReplaceChunks(ctx, a.WorkspaceID, a.SourceID); err != nil {
		return err
	}
	pages := 0
	_, crawlErr := crawl.Crawl(ctx, crawl.Config{Client: c.client, CheckURL: c.guard.CheckURL, MaxPages: c.maxPages}, *src.URL, depth,
		func(p crawl.Page) error {
			var chunks []store.Chunk
			for _, text := range crawl.Chunks(p.Text, 1500) {
				chunks = append(chunks, store.Chunk{URL: p.URL, Title: p.Title, Content: text})
			}
			pages++
			if len(chunks) == 0 {
				return nil
			}
			return c.store.AddChunks(ctx, a.WorkspaceID, a.SourceID, chunks)
		})
	if crawlErr != nil {
		msg := crawlErr.Error()
		return c.store.SetSourceStatus(context.WithoutCancel(ctx), a.WorkspaceID, a.SourceID, SourceFailed, &msg, pages)
	}
	return c.store.SetSourceStatus(ctx, a.WorkspaceID, a.SourceID, SourceReady, nil, pages)
}
