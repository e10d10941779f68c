package store

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"switchboard/textindex"
)

// searchIndexes keeps knowledge bases' chunks in memory (textindex), so that a knowledge
// search costs no round trip to PostgreSQL: with 10,000 chunks, the search was up to 1.31
// times an agent's turn (docs/benchmarks.md, 2026-12-03, afternoon). A search in memory
// finds what SearchKnowledgeWith's statements find, in the same order: the same tiers, the
// same first candidates of a tier (the chunks in the table's physical order, as the
// statements' bitmap scans meet them), ts_rank's ranks computed as PostgreSQL computes them
// (TestSearchInMemoryFindsWhatTheStatementsFind).
//
// Why a copy is never stale, on any replica: every statement that changes a knowledge base's
// chunks adds one to its generation (migration 0040's triggers), which the search's plan reads
// with the turn (AgentTurnState, KnowledgeSearchPlan); a copy serves a search only when its
// generation is the plan's, and it was read in one statement with the chunks it holds. A
// search that finds no such copy runs the statements, and has the copy loaded in the
// background for the next one; a turn never waits for a load.
type searchIndexes struct {
	db conn // the pool: loads run outside the turns' transactions
	// reloadGap is how long after a load began the next one may begin (searchIndexReloadGap):
	// while an ingestion changes the generation with every statement, the searches run the
	// statements instead of reading the whole knowledge base again each time.
	reloadGap time.Duration

	mu      sync.Mutex
	m       map[uuid.UUID]*searchIndex // by knowledge base
	bytes   int
	loading map[uuid.UUID]bool
}

// searchIndex is the copy of a knowledge base at a generation. Without chunks (x nil) it
// says that there is no copy of that generation to load: the knowledge base had no chunks,
// or more than a copy may hold, or its load failed (until retry); its searches run the
// statements, and nothing is loaded again until the generation changes.
type searchIndex struct {
	workspace  uuid.UUID
	generation int64
	chunks     []Chunk // in the index's document order
	// sources are the copy's sources, each once; docSource[d] is the number in sources of
	// document d's: a search filters its matches on them without touching the chunks, which
	// lie all over the heap (the filter read each match's chunk, most of a search's time).
	sources   []uuid.UUID
	docSource []int32
	x         *textindex.Index
	bytes     int
	retry     time.Time // a failed load: when to try again
	began     time.Time // when its load began
}

// searchIndexesBytes bounds the chunks kept in memory (their text and postings): 25 MB of
// heap for 10,000 chunks of 850 characters, read and indexed in about half a second. Past
// it, knowledge bases taken at random make room; one larger than a quarter of it (about
// 25,000 such chunks) is searched by the statements only.
const searchIndexesBytes = 256 << 20

// searchIndexLoadTimeout bounds one load; searchIndexRetry is how long a failed one waits.
const (
	searchIndexLoadTimeout = 30 * time.Second
	searchIndexRetry       = 30 * time.Second
	searchIndexReloadGap   = 5 * time.Second
)

// get is the copy of knowledge base kb at generation, or nil: then, unless it is known that
// there is none to load, a load begins in the background.
func (s *searchIndexes) get(workspace, kb uuid.UUID, generation int64) *searchIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.m[kb]
	if ix != nil && ix.workspace == workspace && ix.generation == generation {
		if ix.x != nil {
			return ix
		}
		if time.Now().Before(ix.retry) || ix.retry.IsZero() {
			return nil
		}
	}
	if ix != nil && time.Since(ix.began) < s.reloadGap {
		return nil
	}
	if s.loading == nil {
		s.loading = map[uuid.UUID]bool{}
	}
	if !s.loading[kb] {
		s.loading[kb] = true
		go s.load(workspace, kb, generation)
	}
	return nil
}

// load reads knowledge base kb's chunks and keeps them, at whatever generation they are by
// then; asked is the generation that was missing, which a failed or empty load is kept as.
func (s *searchIndexes) load(workspace, kb uuid.UUID, asked int64) {
	ctx, cancel := context.WithTimeout(context.Background(), searchIndexLoadTimeout)
	defer cancel()
	began := time.Now()
	ix, err := readSearchIndex(ctx, s.db, workspace, kb)
	switch {
	case err != nil:
		ix = &searchIndex{workspace: workspace, generation: asked, retry: time.Now().Add(searchIndexRetry)}
	case ix == nil:
		ix = &searchIndex{workspace: workspace, generation: asked}
	case ix.bytes > searchIndexesBytes/4:
		ix = &searchIndex{workspace: workspace, generation: ix.generation}
	}
	ix.began = began
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.loading, kb)
	if old := s.m[kb]; old != nil {
		s.bytes -= old.bytes
		delete(s.m, kb)
	}
	for key, victim := range s.m { // at random: Go's map order
		if s.bytes+ix.bytes <= searchIndexesBytes {
			break
		}
		s.bytes -= victim.bytes
		delete(s.m, key)
	}
	if s.m == nil {
		s.m = map[uuid.UUID]*searchIndex{}
	}
	s.m[kb] = ix
	s.bytes += ix.bytes
}

// knowledgeIndexChunks is every chunk of a knowledge base with its tsvector, in the table's
// physical order, and the generation they are of: one statement, one snapshot. (Not a sqlc
// query: sqlc does not know the ctid system column.)
const knowledgeIndexChunks = `SELECT b.generation, k.source_id, k.url, k.title, k.content, k.tsv::text
FROM knowledge_bases b JOIN knowledge_sources s ON s.knowledge_base_id = b.id
JOIN knowledge_chunks k ON k.source_id = s.id AND k.workspace_id = b.workspace_id
WHERE b.workspace_id = $1 AND b.id = $2
ORDER BY k.ctid`

// readSearchIndex reads and indexes a knowledge base's chunks; nil when it has none.
func readSearchIndex(ctx context.Context, db conn, workspace, kb uuid.UUID) (*searchIndex, error) {
	rows, err := db.Query(ctx, knowledgeIndexChunks, workspace, kb)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ix := &searchIndex{workspace: workspace}
	var b textindex.Builder
	for rows.Next() {
		var c Chunk
		var source uuid.UUID
		var tsv *string
		if err := rows.Scan(&ix.generation, &source, &c.URL, &c.Title, &c.Content, &tsv); err != nil {
			return nil, err
		}
		if tsv == nil {
			empty := ""
			tsv = &empty
		}
		if err := b.Add(*tsv); err != nil {
			return nil, err
		}
		ix.chunks = append(ix.chunks, c)
		ix.addSource(source)
		ix.bytes += len(c.URL) + len(c.Title) + len(c.Content) + 448 // headers, spare room: the heap measured
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ix.chunks) == 0 {
		return nil, nil
	}
	ix.x = b.Index()
	ix.bytes += ix.x.Bytes() + 4*len(ix.docSource)
	return ix, nil
}

// addSource records the source of the document just added.
func (ix *searchIndex) addSource(source uuid.UUID) {
	n := len(ix.sources) - 1
	if n < 0 || ix.sources[n] != source { // a source's chunks come one after the other
		if n = slices.Index(ix.sources, source); n < 0 {
			n = len(ix.sources)
			ix.sources = append(ix.sources, source)
		}
	}
	ix.docSource = append(ix.docSource, int32(n))
}

// allowed says which of the copy's sources the plan searches; every is true when it
// searches them all (a plan names every source of its knowledge base), so that the matches
// need no filter.
func (ix *searchIndex) allowed(plan SearchPlan) (allowed []bool, every bool) {
	allowed, every = make([]bool, len(ix.sources)), true
	for i, s := range ix.sources {
		allowed[i] = slices.Contains(plan.Sources, s)
		every = every && allowed[i]
	}
	return allowed, every
}

// search is SearchKnowledgeWith's algorithm over the copy: the tiers from every term down to
// two, the first that matches ranked; then the last tier, the chunks in which a term occurs
// more than once ranked, and the others after them in order.
func (ix *searchIndex) search(plan SearchPlan, limit int) []Chunk {
	terms := plan.Lexemes[:min(len(plan.Lexemes), searchTerms)]
	// One pass over the matches keeps what any outcome needs, each list bounded: tiers[m] the
	// first candidates holding m terms or more, then the last tier's two halves.
	var tiers [searchTerms + 1][]int
	var repeated, once []int
	allowed, every := ix.allowed(plan)
	for c := range ix.x.Matches(terms) {
		if !every && !allowed[ix.docSource[c.Doc]] {
			continue
		}
		for m := 2; m <= c.Terms; m++ {
			if len(tiers[m]) < searchCandidates {
				tiers[m] = append(tiers[m], c.Doc)
			}
		}
		switch {
		case c.Repeated && len(repeated) < searchCandidates:
			repeated = append(repeated, c.Doc)
		case !c.Repeated && len(once) < limit:
			once = append(once, c.Doc)
		}
	}
	for m := len(terms); m >= 2; m-- {
		if len(tiers[m]) > 0 {
			return ix.ranked(tiers[m], terms, m == len(terms), limit)
		}
	}
	found := ix.ranked(repeated, terms, false, limit)
	for _, d := range once[:min(len(once), limit-len(found))] {
		found = append(found, ix.chunks[d])
	}
	if len(found) == 0 {
		return nil
	}
	return found
}

// ranked orders docs by ts_rank against the query over terms (the AND of all of them when
// all), best first, and keeps limit of them.
func (ix *searchIndex) ranked(docs []int, terms []string, all bool, limit int) []Chunk {
	type hit struct {
		doc  int
		rank float32
	}
	hits := make([]hit, len(docs))
	rank := ix.x.Ranker(terms, all)
	for i, d := range docs {
		hits[i] = hit{d, rank.Rank(d)}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.rank > b.rank:
			return -1
		case a.rank < b.rank:
			return 1
		}
		return 0
	})
	out := make([]Chunk, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		out = append(out, ix.chunks[h.doc])
	}
	return out
}
