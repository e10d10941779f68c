package store

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"switchboard/store/internal/dbsqlc"
)

func toSource(s dbsqlc.AgentSourcesRow) Source {
	return Source{ID: s.ID, WorkspaceID: s.WorkspaceID, KnowledgeBaseID: s.KnowledgeBaseID, Type: s.Type, URL: s.URL,
		Depth: s.Depth, Status: s.Status, Error: s.Error, Pages: s.Pages, Path: s.Path, UploadID: s.UploadID, UploadShortID: s.UploadShortID}
}

// SourceByID returns a knowledge source of the workspace.
func (q *queries) SourceByID(ctx context.Context, workspaceID, id uuid.UUID) (Source, error) {
	s, err := q.sql.SourceByID(ctx, q.db, dbsqlc.SourceByIDParams{WorkspaceID: workspaceID, ID: id})
	return toSource(dbsqlc.AgentSourcesRow(s)), notFound("knowledge source", err)
}

// SetSourceStatus moves a source through its states: queued, crawling, ready or failed for a
// website crawl; pending, ready or failed for the other types.
func (q *queries) SetSourceStatus(ctx context.Context, workspaceID, id uuid.UUID, status string, errMsg *string, pages int) error {
	return q.sql.SetSourceStatus(ctx, q.db, dbsqlc.SetSourceStatusParams{WorkspaceID: workspaceID, ID: id, Status: status,
		Error: errMsg, Pages: pages})
}

// Chunk is a piece of extracted text.
type Chunk struct {
	URL, Title, Content string
}

// ReplaceChunks drops the chunks of a source from an earlier crawl; used when a crawl starts.
func (q *queries) ReplaceChunks(ctx context.Context, workspaceID, sourceID uuid.UUID) error {
	return q.sql.DeleteChunks(ctx, q.db, dbsqlc.DeleteChunksParams{WorkspaceID: workspaceID, SourceID: sourceID})
}

// AddChunks stores chunks of a source (one COPY), then merges the search indexes' pending
// lists, which every search reads in full until a vacuum does (migration 0034: 64 ms of
// PostgreSQL CPU a search instead of 0.65 ms right after 10,000 chunks were stored).
func (q *queries) AddChunks(ctx context.Context, workspaceID, sourceID uuid.UUID, chunks []Chunk) error {
	rows := make([]dbsqlc.InsertChunksParams, len(chunks))
	for i, c := range chunks {
		rows[i] = dbsqlc.InsertChunksParams{WorkspaceID: workspaceID, SourceID: sourceID, URL: c.URL, Title: c.Title, Content: c.Content}
	}
	if _, err := q.sql.InsertChunks(ctx, q.db, rows); err != nil {
		return err
	}
	return q.sql.CleanKnowledgePending(ctx, q.db)
}

// Limits of a knowledge search.
const (
	// searchTerms is how many of a query's distinct lexemes count: the tiers below grow with
	// the number of their combinations, and a question rarely needs more.
	searchTerms = 6
	// searchCandidates is how many matching chunks one tier ranks. They all hold the same
	// number of the query's terms (the tier above found none), so the cap only drops among
	// equals, and it bounds the cost of a query of common words on a large knowledge base
	// (in the last tier, of the chunks in which a term occurs more than once).
	searchCandidates = 500
)

// SearchKnowledge finds the chunks of an agent's knowledge base that best match the query,
// best first. The query is read in the knowledge base's language (stemmed, stop words out);
// chunks holding all its terms come first, and when none does, those holding all but one,
// and so on down to any one term (tiers: each is one GIN index scan, and only the first tier
// that matches is ranked, by ts_rank). The last tier ranks only the chunks in which a term
// occurs more than once, which ts_rank puts above all others (tsv_repeated, migration 0034),
// and adds others, of equal rank, when those are fewer than the limit. Each tsquery is a
// parameter of its statement, parsed once (see SearchKnowledgeTier); AddChunks empties the
// indexes' pending lists and the tsvector stays in the row: what a search costs is in
// docs/benchmarks.md ("Knowledge search").
func (q *queries) SearchKnowledge(ctx context.Context, workspaceID, agentID uuid.UUID, query string, limit int) ([]Chunk, error) {
	plan, err := q.sql.KnowledgeSearchPlan(ctx, q.db, dbsqlc.KnowledgeSearchPlanParams{WorkspaceID: workspaceID, AgentID: agentID, Query: query})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return q.SearchKnowledgeWith(ctx, workspaceID, SearchPlan{Sources: plan.Sources, Lexemes: plan.Lexemes, Base: plan.ID, Generation: plan.Generation}, limit)
}

// SearchPlan is what a knowledge search needs before it looks (KnowledgeSearchPlan): the
// sources of the agent's knowledge base and the query's lexemes in its language. The zero
// plan (no knowledge base) finds nothing.
type SearchPlan struct {
	Sources []uuid.UUID
	Lexemes []string
	// Base and Generation are the knowledge base and its generation (migration 0040) as the
	// plan was read: a copy of its chunks in memory at that generation may serve the search.
	Base       uuid.UUID
	Generation int64
}

// SearchKnowledgeWith is SearchKnowledge from a plan read beforehand (AgentTurnState).
func (q *queries) SearchKnowledgeWith(ctx context.Context, workspaceID uuid.UUID, plan SearchPlan, limit int) ([]Chunk, error) {
	if len(plan.Sources) == 0 || len(plan.Lexemes) == 0 {
		return nil, nil
	}
	if q.indexes != nil && plan.Base != uuid.Nil {
		if ix := q.indexes.get(workspaceID, plan.Base, plan.Generation); ix != nil {
			return ix.search(plan, limit), nil
		}
	}
	terms := plan.Lexemes[:min(len(plan.Lexemes), searchTerms)]
	for m := len(terms); m >= 2; m-- {
		rows, err := q.sql.SearchKnowledgeTier(ctx, q.db, dbsqlc.SearchKnowledgeTierParams{WorkspaceID: workspaceID, Sources: plan.Sources,
			Query: AtLeast(terms, m), Candidates: searchCandidates, Max: limit})
		if err != nil || len(rows) > 0 {
			return mapRows(rows, func(r dbsqlc.SearchKnowledgeTierRow) Chunk { return Chunk(r) }), err
		}
	}
	// The last tier, any one term: each match holds exactly one of them, and ts_rank grows
	// with how often it occurs, so the chunks in which it occurs more than once come first
	// (ranked), and the others, all equal, only when those are fewer than the limit. The
	// second half is needed nine times in ten (bench/run.sh agents: 0.39 of 0.43 a turn), so
	// both travel in one round trip, the second asking for the whole limit; what the first
	// found leaves the room the second fills.
	anyTerm := AtLeast(terms, 1)
	var repeated []dbsqlc.SearchKnowledgeRepeatedRow
	var once []dbsqlc.SearchKnowledgeOnceRow
	batch := &pgx.Batch{}
	if err := queueRows(batch, func(db dbsqlc.DBTX, got bool) (err error) {
		rows, err := q.sql.SearchKnowledgeRepeated(ctx, db, dbsqlc.SearchKnowledgeRepeatedParams{WorkspaceID: workspaceID, Sources: plan.Sources,
			Query: anyTerm, Candidates: searchCandidates, Max: limit})
		if got {
			repeated = rows
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := queueRows(batch, func(db dbsqlc.DBTX, got bool) (err error) {
		rows, err := q.sql.SearchKnowledgeOnce(ctx, db, dbsqlc.SearchKnowledgeOnceParams{WorkspaceID: workspaceID, Sources: plan.Sources,
			Query: anyTerm, Max: limit})
		if got {
			once = rows
		}
		return err
	}); err != nil {
		return nil, err
	}
	if err := q.db.SendBatch(ctx, batch).Close(); err != nil {
		return nil, err
	}
	found := mapRows(repeated, func(r dbsqlc.SearchKnowledgeRepeatedRow) Chunk { return Chunk(r) })
	once = once[:min(len(once), limit-len(found))]
	found = append(found, mapRows(once, func(r dbsqlc.SearchKnowledgeOnceRow) Chunk { return Chunk(r) })...)
	if len(found) == 0 {
		found = nil
	}
	return found, nil
}

// AtLeast is the tsquery matching documents that hold at least m of the lexemes: the OR of
// the AND of each m of them ('a' & 'b' | 'a' & 'c' | 'b' & 'c' for three lexemes and m = 2).
func AtLeast(lexemes []string, m int) string {
	quoted := make([]string, len(lexemes))
	for i, l := range lexemes {
		quoted[i] = "'" + strings.ReplaceAll(strings.ReplaceAll(l, `\`, `\\`), "'", "''") + "'"
	}
	var alts []string
	var pick func(start int, chosen []string)
	pick = func(start int, chosen []string) {
		if len(chosen) == m {
			alts = append(alts, strings.Join(chosen, " & "))
			return
		}
		for i := start; i <= len(quoted)-(m-len(chosen)); i++ {
			pick(i+1, append(chosen, quoted[i]))
		}
	}
	pick(0, make([]string, 0, m))
	return strings.Join(alts, " | ")
}

// AgentSources lists the sources of an agent's knowledge base, oldest first.
func (q *queries) AgentSources(ctx context.Context, workspaceID, agentID uuid.UUID) ([]Source, error) {
	rows, err := q.sql.AgentSources(ctx, q.db, dbsqlc.AgentSourcesParams{WorkspaceID: workspaceID, AgentID: agentID})
	return mapRows(rows, toSource), err
}
