//go:build knowledgebench

package store_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestMeasureKnowledgeSearch measures search_knowledge_base's query on an agent holding
// 10,000 and 100,000 chunks (KNOWLEDGE_BENCH_SIZES overrides), as docs/benchmarks.md reports
// it: store.SearchKnowledge on the schema of this tree ("after") beside the search of the
// commit before it on the schema before the newest knowledge migration ("before": a second
// database with that migration's Down applied, the same corpus and the same queries), one
// query at a time, alternately, so that both share the machine's load. Not a unit test (no
// timing is asserted); run it with `bench/run.sh knowledge`.
//
// Two phases: right after the chunks are stored (no VACUUM and no ANALYZE, autovacuum off for
// the table, as a deployed agent is searched once its upload is ingested; KNOWLEDGE_BENCH_FRESH
// searches, 100; KNOWLEDGE_BENCH_ANALYZE=1 analyzes first), then after VACUUM ANALYZE (500
// searches after 50 of warm-up). Each search's figures: its latency (p50, p99), the
// CPU its PostgreSQL backend spent (/proc/PID/schedstat of the connection's backend: each
// store has a pool of one connection), and, when the cluster loads pg_stat_statements
// (bench/run.sh does), the statements and their execution time per search. Then the quality
// of each one's answers against the full ranking (every match of the first matching tier
// ranked by ts_rank, no cap on candidates): the overlap of the top 5, and the sum of the
// returned chunks' ts_rank over the full ranking's (ties make the top 5's members arbitrary
// among equals, so the second measure is the one to read).
//
// The corpus is synthetic and deterministic: chunks of about 120 words drawn from a 20,000-word
// vocabulary with a Zipf distribution (as words are in real text, so common words match most
// chunks and rank the most rows); queries are 2 to 4 words from the same distribution, the 50
// most common left out as a reader leaves out "the". The agent's language has no stemming
// configuration ('simple').
func TestMeasureKnowledgeSearch(t *testing.T) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("KNOWLEDGE_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) { measureSearch(t, n) })
	}
}

// newestKnowledgeMigration is the migration "before" is measured without.
const newestKnowledgeMigration = "migrations/0034_knowledge_search_cost.sql"

// benchAgent is one database of the comparison: a store on a pool of one connection, its
// agent, and that connection's backend.
type benchAgent struct {
	s          *store.Store
	ws, agent  uuid.UUID
	source     uuid.UUID
	db         string
	backendPID uint32
}

func newBenchAgent(t *testing.T, ctx context.Context, before bool) *benchAgent {
	cfg, err := store.PoolConfig(storetest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 1, 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &benchAgent{s: store.New(pool)}
	if before {
		src, err := os.ReadFile(newestKnowledgeMigration)
		if err != nil {
			t.Fatal(err)
		}
		_, down, _ := strings.Cut(string(src), "-- +goose Down")
		if _, err := pool.Exec(ctx, down); err != nil {
			t.Fatal(err)
		}
	}
	if err := pool.QueryRow(ctx, `SELECT current_database(), pg_backend_pid()`).Scan(&b.db, &b.backendPID); err != nil {
		t.Fatal(err)
	}
	w, err := b.s.CreateWorkspace(ctx, "bench", 0)
	if err != nil {
		t.Fatal(err)
	}
	a, sources, err := b.s.CreateAgent(ctx, w.ID, "bench", []byte(`{"name":"bench","language":"ja"}`),
		[]store.NewSource{{Type: "website", URL: "https://example.com", Status: "ready"}})
	if err != nil {
		t.Fatal(err)
	}
	b.ws, b.agent, b.source = w.ID, a.ID, sources[0].ID
	return b
}

// backendCPU is the CPU time the connection's backend has spent, or -1 when /proc does not
// show it (PostgreSQL on another machine).
func (b *benchAgent) backendCPU() time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", b.backendPID))
	if err != nil {
		return -1
	}
	ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
	if err != nil {
		return -1
	}
	return time.Duration(ns)
}

// searchStrategy is one search measured.
type searchStrategy struct {
	name   string
	on     *benchAgent
	search func(q string) ([]store.Chunk, error)
	took   []time.Duration
	cpu    time.Duration
	empty  int
	found  map[string][]store.Chunk
}

func measureSearch(t *testing.T, chunks int) {
	ctx := context.Background()
	after, before := newBenchAgent(t, ctx, false), newBenchAgent(t, ctx, true)
	agents := []*benchAgent{before, after}
	names := map[*benchAgent]string{before: "before", after: "after"}
	var variant *benchAgent
	candidates := 0
	if v := os.Getenv("KNOWLEDGE_BENCH_CANDIDATES"); v != "" {
		var err error
		if candidates, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
		variant = newBenchAgent(t, ctx, false)
		agents = append(agents, variant)
		names[variant] = "variant"
	}

	vocab := vocabulary(20_000)
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := newZipf(rng, len(vocab))
	batches := make([][]store.Chunk, 0, chunks/5_000+1)
	for start := 0; start < chunks; start += 5_000 {
		batch := make([]store.Chunk, 0, 5_000)
		for i := start; i < min(chunks, start+5_000); i++ {
			batch = append(batch, store.Chunk{URL: fmt.Sprintf("https://example.com/p/%d", i), Title: sentence(zipf, vocab, 6), Content: sentence(zipf, vocab, 120)})
		}
		batches = append(batches, batch)
	}
	for _, b := range agents {
		// No autovacuum on the chunks: the first phase measures a search before any vacuum,
		// whenever autovacuum would have come.
		if _, err := b.s.Pool().Exec(ctx, `ALTER TABLE knowledge_chunks SET (autovacuum_enabled = off)`); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		for _, batch := range batches {
			if b != before {
				if err := b.s.AddChunks(ctx, b.ws, b.source, batch); err != nil {
					t.Fatal(err)
				}
				continue
			}
			// The previous commit's AddChunks: the COPY alone.
			rows := make([][]any, len(batch))
			for i, c := range batch {
				rows[i] = []any{b.ws, b.source, c.URL, c.Title, c.Content}
			}
			if _, err := b.s.Pool().CopyFrom(ctx, pgx.Identifier{"knowledge_chunks"}, []string{"workspace_id", "source_id", "url", "title", "content"},
				pgx.CopyFromRows(rows)); err != nil {
				t.Fatal(err)
			}
		}
		if os.Getenv("KNOWLEDGE_BENCH_ANALYZE") != "" {
			if _, err := b.s.Pool().Exec(ctx, `ANALYZE knowledge_chunks`); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %d chunks stored in %s", names[b], chunks, time.Since(began).Round(time.Millisecond))
	}

	strategies := []*searchStrategy{
		{name: "after (store.SearchKnowledge)", on: after, search: func(q string) ([]store.Chunk, error) {
			return after.s.SearchKnowledge(ctx, after.ws, after.agent, q, 5)
		}},
		{name: "before (tiers, tsquery as text)", on: before, search: func(q string) ([]store.Chunk, error) { return searchBefore(ctx, before, q) }},
	}
	if variant != nil {
		strategies = append(strategies, &searchStrategy{name: fmt.Sprintf("tiers, %d candidates", candidates), on: variant,
			search: func(q string) ([]store.Chunk, error) { return searchCandidates(ctx, variant, q, candidates) }})
	}
	fresh := 100
	if v := os.Getenv("KNOWLEDGE_BENCH_FRESH"); v != "" {
		var err error
		if fresh, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	var queries []string
	phase := func(label string, warmup, searches int) {
		var stats func(db string) (calls, ms float64)
		for _, st := range strategies {
			st.took, st.cpu, st.empty, st.found = nil, 0, 0, map[string][]store.Chunk{}
		}
		for i := range warmup + searches {
			q := query(zipf, vocab, 2+rng.IntN(3))
			if i == warmup {
				stats = statementsReset(t, ctx)
			}
			if i >= warmup {
				queries = append(queries, q)
			}
			for _, st := range strategies {
				cpu0, t0 := st.on.backendCPU(), time.Now()
				found, err := st.search(q)
				d, cpu := time.Since(t0), st.on.backendCPU()-cpu0
				if err != nil {
					t.Fatal(err)
				}
				if i >= warmup {
					st.took = append(st.took, d)
					st.cpu += cpu
					st.found[q] = found
					if len(found) == 0 {
						st.empty++
					}
				}
			}
		}
		var load [3]float64
		if raw, err := os.ReadFile("/proc/loadavg"); err == nil {
			_, _ = fmt.Sscan(string(raw), &load[0], &load[1], &load[2])
		}
		t.Logf("%d chunks, %s: load average %.1f %.1f %.1f", chunks, label, load[0], load[1], load[2])
		for _, st := range strategies {
			d := st.took
			slices.Sort(d)
			pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(10 * time.Microsecond) }
			line := fmt.Sprintf("  %-34s %d searches, p50 %s, p99 %s, max %s, backend CPU %.0f µs a search", st.name, len(d), pct(0.5), pct(0.99), pct(1),
				float64(st.cpu.Microseconds())/float64(len(d)))
			if stats != nil {
				calls, ms := stats(st.on.db)
				line += fmt.Sprintf(", %.2f statements and %.3f ms of execution a search (pg_stat_statements)", calls/float64(len(d)), ms/float64(len(d)))
			}
			t.Logf("%s (%d found nothing)", line, st.empty)
		}
	}
	phase("right after ingestion (no VACUUM, no ANALYZE)", 10, fresh)
	for _, b := range agents {
		if _, err := b.s.Pool().Exec(ctx, `VACUUM ANALYZE knowledge_chunks`); err != nil {
			t.Fatal(err)
		}
	}
	queries = nil
	phase("after VACUUM ANALYZE", 50, 500)
	for _, st := range strategies {
		overlap, scores, same := searchQuality(t, ctx, after, queries, st.found)
		t.Logf("  %-34s quality against the full ranking over %d queries: top-5 overlap %.3f, ts_rank sum %.3f of the full ranking's, same ranks as the full ranking in %.1f%% of queries",
			st.name, len(queries), overlap, scores, 100*same)
	}
}

// searchBefore is the search of the commit before this one, for a baseline in the same run:
// the same tiers, the tsquery passed as text and cast in the statement.
func searchBefore(ctx context.Context, b *benchAgent, q string) ([]store.Chunk, error) {
	return searchTiers(ctx, b, q, 500, `SELECT c.url, c.title, c.content FROM (
    SELECT k.url, k.title, k.content, k.tsv FROM knowledge_chunks k
    WHERE k.workspace_id = $1 AND k.source_id = ANY($2::uuid[]) AND k.tsv @@ ($3::text)::tsquery
    LIMIT $4::int) c
ORDER BY ts_rank(c.tsv, ($3::text)::tsquery) DESC
LIMIT $5::int`)
}

// searchCandidates is the tiers of the previous commit with the tsquery as a parameter and
// another cap on the candidates ranked (KNOWLEDGE_BENCH_CANDIDATES): the option of ranking
// fewer, measured on a database of its own.
func searchCandidates(ctx context.Context, b *benchAgent, q string, candidates int) ([]store.Chunk, error) {
	return searchTiers(ctx, b, q, candidates, `SELECT c.url, c.title, c.content FROM (
    SELECT k.url, k.title, k.content, k.tsv FROM knowledge_chunks k
    WHERE k.workspace_id = $1 AND k.source_id = ANY($2::uuid[]) AND k.tsv @@ $3::tsquery
    LIMIT $4::int) c
ORDER BY ts_rank(c.tsv, $3::tsquery) DESC
LIMIT $5::int`)
}

func searchTiers(ctx context.Context, b *benchAgent, q string, candidates int, tier string) ([]store.Chunk, error) {
	var sources []uuid.UUID
	var lexemes []string
	err := b.s.Pool().QueryRow(ctx, `SELECT coalesce((SELECT array_agg(s.id) FROM knowledge_sources s WHERE s.knowledge_base_id = b.id), '{}')::uuid[],
    tsvector_to_array(to_tsvector(b.ts_config, $3::text))::text[]
FROM knowledge_bases b WHERE b.workspace_id = $1 AND b.agent_id = $2`, b.ws, b.agent, q).Scan(&sources, &lexemes)
	if err != nil || len(sources) == 0 || len(lexemes) == 0 {
		return nil, err
	}
	terms := lexemes[:min(len(lexemes), 6)]
	for m := len(terms); m >= 1; m-- {
		rows, err := b.s.Pool().Query(ctx, tier, b.ws, sources, store.AtLeast(terms, m), candidates, 5)
		if err != nil {
			return nil, err
		}
		found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[store.Chunk])
		if err != nil || len(found) > 0 {
			return found, err
		}
	}
	return nil, nil
}

// searchQuality compares the answers to the full ranking: the first tier that matches, every
// match ranked by ts_rank. It returns the mean overlap of the top 5, the mean ratio of the
// returned chunks' ts_rank sum to the full ranking's top 5's, and the share of queries whose
// answers have the same ranks as the full ranking's top 5 (equal ranks are interchangeable).
func searchQuality(t *testing.T, ctx context.Context, b *benchAgent, queries []string, found map[string][]store.Chunk) (overlap, scores, same float64) {
	n := 0
	for _, q := range queries {
		var lexemes []string
		if err := b.s.Pool().QueryRow(ctx, `SELECT tsvector_to_array(to_tsvector(ts_config, $2::text))::text[] FROM knowledge_bases WHERE agent_id = $1`,
			b.agent, q).Scan(&lexemes); err != nil {
			t.Fatal(err)
		}
		terms := lexemes[:min(len(lexemes), 6)]
		var rank map[string]float64
		var full []string
		for m := len(terms); m >= 1 && len(full) == 0; m-- {
			rows, err := b.s.Pool().Query(ctx, `SELECT url, ts_rank(tsv, $2::tsquery) FROM knowledge_chunks
WHERE workspace_id = $1 AND tsv @@ $2::tsquery ORDER BY 2 DESC`, b.ws, store.AtLeast(terms, m))
			if err != nil {
				t.Fatal(err)
			}
			rank = map[string]float64{}
			for rows.Next() {
				var url string
				var r float64
				if err := rows.Scan(&url, &r); err != nil {
					t.Fatal(err)
				}
				rank[url] = r
				full = append(full, url)
			}
			rows.Close()
		}
		if len(full) == 0 {
			continue
		}
		n++
		top := full[:min(5, len(full))]
		var got, want float64
		common, sameRanks := 0, len(found[q]) == len(top)
		for i, c := range found[q] {
			got += rank[c.URL]
			if slices.Contains(top, c.URL) {
				common++
			}
			if i < len(top) && rank[c.URL] != rank[top[i]] {
				sameRanks = false
			}
		}
		for _, u := range top {
			want += rank[u]
		}
		overlap += float64(common) / float64(len(top))
		scores += got / want
		if sameRanks {
			same++
		}
	}
	return overlap / float64(n), scores / float64(n), same / float64(n)
}

// statementsReset empties pg_stat_statements and returns a function giving a database's
// statements and their execution time (ms) since; nil when the cluster does not load it.
func statementsReset(t *testing.T, ctx context.Context) func(db string) (calls, ms float64) {
	admin, err := pgx.Connect(ctx, storetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		_ = admin.Close(ctx)
		return nil
	}
	if _, err := admin.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		_ = admin.Close(ctx)
		return nil
	}
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	return func(db string) (calls, ms float64) {
		rows, err := admin.Query(ctx, `SELECT s.calls::float8, s.total_exec_time, regexp_replace(s.query, '\s+', ' ', 'g')
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 ORDER BY s.total_exec_time DESC`, db)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var c, m float64
			var q string
			if err := rows.Scan(&c, &m, &q); err != nil {
				t.Fatal(err)
			}
			calls, ms = calls+c, ms+m
			if os.Getenv("KNOWLEDGE_BENCH_STATEMENTS") != "" {
				t.Logf("    %6.0f calls, %7.1f µs each: %.110s", c, 1000*m/c, q)
			}
		}
		return calls, ms
	}
}

// vocabulary is n pronounceable made-up words, the same every run.
func vocabulary(n int) []string {
	rng := rand.New(rand.NewPCG(7, 7))
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// zipf draws word ranks with exponent 1.1: rank 0 is the most common word.
type zipf struct {
	rng *rand.Rand
	cdf []float64
}

func newZipf(rng *rand.Rand, n int) *zipf {
	cdf := make([]float64, n)
	total := 0.0
	for i := range n {
		total += 1 / math.Pow(float64(i+1), 1.1)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	return &zipf{rng: rng, cdf: cdf}
}

func (z *zipf) next() int {
	i, _ := slices.BinarySearch(z.cdf, z.rng.Float64())
	return min(i, len(z.cdf)-1)
}

func sentence(z *zipf, vocab []string, words int) string {
	out := make([]string, words)
	for i := range out {
		out[i] = vocab[z.next()]
	}
	return strings.Join(out, " ")
}

func query(z *zipf, vocab []string, words int) string {
	out := make([]string, 0, words)
	for len(out) < words {
		if r := z.next(); r >= 50 {
			out = append(out, vocab[r])
		}
	}
	return strings.Join(out, " ")
}
