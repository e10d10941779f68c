package benchkit

import (
	"math/rand/v2"
	"strings"
	"testing"

	"switchboard/knowledge"
)

// Each paragraph of the corpus is one chunk of the server's chunker (so -chunks is the
// number of chunks the agent searches), and every query word is in the document (so the
// searches find something and the escalation rule never answers in place of the model).
func TestCorpusChunksAndQueries(t *testing.T) {
	c := NewCorpus(49, 20_000)
	doc := string(c.Document(300))
	if n := len(knowledge.Chunks(doc)); n != 300 {
		t.Fatalf("%d chunks, want 300 (one per paragraph)", n)
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(strings.ReplaceAll(doc, ".", " ")) {
		words[w] = true
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		q := strings.Fields(c.Query(r))
		if len(q) < 2 || len(q) > 3 {
			t.Fatalf("query %q: want 2 or 3 words", q)
		}
		for _, w := range q {
			if !words[w] {
				t.Fatalf("query word %q is not in the document", w)
			}
		}
	}
}
