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

	"switchboard/store"
	"switchboard/store/storetest"
)

// TestMeasureKnowledgeSearch measures search_knowledge_base's query on an agent holding
// 10,000 and 100,000 chunks (KNOWLEDGE_BENCH_SIZES overrides), as docs/benchmarks.md reports
// it: store.SearchKnowledge (the tiers from every term down to any one) and, as a baseline in
// the same run, the search before it, one query at a time, alternately; p50 and p99 over 500
// queries after 50 of warm-up. The agent's language has no stemming configuration ('simple'),
// so both read the same words. Not a unit test (no timing is asserted); run it with
// `bench/run.sh knowledge`.
//
// The corpus is synthetic and deterministic: chunks of about 120 words drawn from a 20,000-word
// vocabulary with a Zipf distribution (as words are in real text, so common words match most
// chunks and rank the most rows); queries are 2 to 4 words from the same distribution, the 50
// most common left out as a reader leaves out "the".
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

func measureSearch(t *testing.T, chunks int) {
	ctx := context.Background()
	s := storetest.New(t)
	w, err := s.CreateWorkspace(ctx, "bench", 0)
	if err != nil {
		t.Fatal(err)
	}
	a, sources, err := s.CreateAgent(ctx, w.ID, "bench", []byte(`{"name":"bench","language":"ja"}`),
		[]store.NewSource{{Type: "website", URL: "https://example.com", Status: "ready"}})
	if err != nil {
		t.Fatal(err)
	}
	vocab := vocabulary(20_000)
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := newZipf(rng, len(vocab))
	began := time.Now()
	for start := 0; start < chunks; start += 5_000 {
		batch := make([]store.Chunk, 0, 5_000)
		for i := start; i < min(chunks, start+5_000); i++ {
			batch = append(batch, store.Chunk{URL: fmt.Sprintf("https://example.com/p/%d", i), Title: sentence(zipf, vocab, 6), Content: sentence(zipf, vocab, 120)})
		}
		if err := s.AddChunks(ctx, w.ID, sources[0].ID, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `VACUUM ANALYZE knowledge_chunks`); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d chunks stored in %s", chunks, time.Since(began).Round(time.Millisecond))

	if os.Getenv("KNOWLEDGE_BENCH_EXPLAIN") != "" {
		terms := strings.Fields(query(zipf, vocab, 3))
		for _, tsq := range []string{store.AtLeast(terms, 3), store.AtLeast(terms, 2), store.AtLeast(terms, 1)} {
			rows, err := s.Pool().Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) SELECT c.url, c.title, c.content FROM (
    SELECT k.url, k.title, k.content, k.tsv FROM knowledge_chunks k
    WHERE k.workspace_id = $1 AND k.source_id = ANY($2::uuid[]) AND k.tsv @@ ($3::text)::tsquery LIMIT 500) c
ORDER BY ts_rank(c.tsv, ($3::text)::tsquery) DESC LIMIT 5`, w.ID, []any{sources[0].ID}, tsq)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var line string
				_ = rows.Scan(&line)
				plan = append(plan, line)
			}
			rows.Close()
			t.Logf("%q:\n%s", tsq, strings.Join(plan, "\n"))
		}
	}
	// Each query runs through both, alternately, so that the figures share the machine's load.
	strategies := []struct {
		name   string
		search func(q string) ([]store.Chunk, error)
	}{
		{"tiers (store.SearchKnowledge)", func(q string) ([]store.Chunk, error) { return s.SearchKnowledge(ctx, w.ID, a.ID, q, 5) }},
		{"before: every word, then any word", func(q string) ([]store.Chunk, error) { return searchBefore(ctx, s, w.ID, a.ID, q) }},
	}
	took := make([][]time.Duration, len(strategies))
	empty := make([]int, len(strategies))
	for i := range 550 {
		q := query(zipf, vocab, 2+rng.IntN(3))
		for j, st := range strategies {
			t0 := time.Now()
			found, err := st.search(q)
			d := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			if i >= 50 {
				took[j] = append(took[j], d)
				if len(found) == 0 {
					empty[j]++
				}
			}
		}
	}
	for j, st := range strategies {
		d := took[j]
		slices.Sort(d)
		pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))].Round(10 * time.Microsecond) }
		t.Logf("%d chunks, %s: %d searches, p50 %s, p99 %s, max %s (%d found nothing)", chunks, st.name, len(d), pct(0.5), pct(0.99), pct(1), empty[j])
	}
}

// searchBefore is the search of the commits before the tiers, for a baseline in the same run:
// every word (PostgreSQL's websearch syntax, no stemming), then any word when none matched,
// each ranked over every match.
func searchBefore(ctx context.Context, s *store.Store, ws, agent uuid.UUID, q string) ([]store.Chunk, error) {
	run := func(q string) ([]store.Chunk, error) {
		rows, err := s.Pool().Query(ctx, `SELECT k.url, k.title, k.content FROM knowledge_chunks k
JOIN knowledge_sources s ON s.id = k.source_id JOIN knowledge_bases b ON b.id = s.knowledge_base_id
WHERE k.workspace_id = $1 AND b.agent_id = $2 AND k.tsv @@ websearch_to_tsquery('simple', $3::text)
ORDER BY ts_rank(k.tsv, websearch_to_tsquery('simple', $3::text)) DESC LIMIT 5`, ws, agent, q)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowToStructByPos[store.Chunk])
	}
	found, err := run(q)
	if err != nil || len(found) > 0 {
		return found, err
	}
	return run(strings.Join(strings.Fields(q), " or "))
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
