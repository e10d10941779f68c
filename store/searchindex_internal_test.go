package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"switchboard/textindex"
)

// zipfCopy is a copy of docs chunks of about 130 words drawn with a Zipf law from 20,000, as
// bench/run.sh agents uploads (benchkit.Corpus), the chunk d of sources[d%len(sources)], and
// questions of 2 or 3 of their less common words, as it asks.
func zipfCopy(t testing.TB, docs int, sources ...uuid.UUID) (*searchIndex, [][]string) {
	const vocabulary, words = 20_000, 130
	r := rand.New(rand.NewPCG(49, 1))
	zipf := rand.NewZipf(r, 1.1, 1, vocabulary-1)
	lexeme := func(i uint64) string { return fmt.Sprintf("w%05d", i) }
	ix := &searchIndex{}
	var tb textindex.Builder
	used := make([]bool, vocabulary)
	for d := range docs {
		positions := map[uint64][]int{}
		for p := 1; p <= words; p++ {
			w := zipf.Uint64()
			positions[w] = append(positions[w], p)
			used[w] = true
		}
		var tsv strings.Builder
		for w, ps := range positions {
			fmt.Fprintf(&tsv, "'%s':", lexeme(w))
			for i, p := range ps {
				if i > 0 {
					tsv.WriteByte(',')
				}
				fmt.Fprint(&tsv, p)
			}
			tsv.WriteByte(' ')
		}
		if err := tb.Add(tsv.String()); err != nil {
			t.Fatal(err)
		}
		ix.chunks = append(ix.chunks, Chunk{Content: fmt.Sprint(d)})
		ix.addSource(sources[d%len(sources)])
	}
	ix.x = tb.Index()
	var questions [][]string
	for len(questions) < 200 {
		var terms []string
		for n := 2 + r.IntN(2); len(terms) < n; {
			if i := int(vocabulary * r.Float64() * r.Float64() * r.Float64()); i >= 50 && used[i] && !slices.Contains(terms, lexeme(uint64(i))) {
				terms = append(terms, lexeme(uint64(i)))
			}
		}
		questions = append(questions, terms)
	}
	return ix, questions
}

// TestSearchInMemoryKeepsToThePlansSources: a plan that names one of the copy's two sources
// finds chunks of that source only, and what a search of both would rank among them.
// (TestSearchInMemoryFindsWhatTheStatementsFind holds the search to the statements; its plans
// name every source of their knowledge base, as AgentTurnState's do.)
func TestSearchInMemoryKeepsToThePlansSources(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	ix, questions := zipfCopy(t, 2_000, a, b)
	if len(ix.sources) != 2 || len(ix.docSource) != 2_000 {
		t.Fatalf("sources %v, %d documents' sources", ix.sources, len(ix.docSource))
	}
	fromB := 0
	for _, q := range questions {
		for _, c := range ix.search(SearchPlan{Sources: []uuid.UUID{a}, Lexemes: q}, 5) {
			var d int
			fmt.Sscan(c.Content, &d)
			if d%2 != 0 {
				t.Fatalf("question %v found chunk %d, of the source the plan does not name", q, d)
			}
		}
		for _, c := range ix.search(SearchPlan{Sources: []uuid.UUID{b, a}, Lexemes: q}, 5) {
			var d int
			fmt.Sscan(c.Content, &d)
			fromB += d % 2
		}
	}
	if fromB == 0 {
		t.Fatal("a plan of both sources never found a chunk of the second")
	}
}

// BenchmarkSearchInMemory is one knowledge search of a turn over a copy of 10,000 chunks in
// memory (searchIndex.search, no database), with zipfCopy's questions. Its allocations are
// what the agent turn's profile charges to the search. In warm, the copy stays in the CPU's
// caches from one search to the next; in cold, 32 MB are read between two searches (off
// the clock), as a server's other work evicts the copy between two turns' searches.
func BenchmarkSearchInMemory(b *testing.B) {
	source := uuid.New()
	ix, questions := zipfCopy(b, 10_000, source)
	evict := make([]byte, 32<<20)
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "cold"}[cold], func(b *testing.B) {
			b.ReportAllocs()
			i, sum := 0, 0
			for b.Loop() {
				if cold {
					b.StopTimer()
					for j := 0; j < len(evict); j += 64 {
						sum += int(evict[j])
						evict[j]++
					}
					b.StartTimer()
				}
				if len(ix.search(SearchPlan{Sources: []uuid.UUID{source}, Lexemes: questions[i%len(questions)]}, 5)) == 0 {
					b.Fatal("a question found nothing")
				}
				i++
			}
			_ = sum
		})
	}
}
