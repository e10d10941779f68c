package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
	"switchboard/textindex"
)

// searchWords are the words of the generated chunks and questions: plurals and verb forms
// that English stemming merges, words that occur everywhere and words that occur rarely.
var searchWords = strings.Fields(`bread breads loaf loaves bake baked baking bakery cake cakes
	sunday sundays monday open opening opens closed close hours hour delivery deliveries deliver
	order orders ordered gluten free vegan sourdough rye wheat flour butter croissant croissants
	parking park shop shops price prices refund refunds birthday wedding coffee tea milk sugar
	morning evening weekend holiday holidays oven ovens crust slice slices fresh daily week`)

// pick draws a word, the first ones far more often than the last (Zipf-like).
func pick(r *rand.Rand) string {
	return searchWords[int(float64(len(searchWords))*r.Float64()*r.Float64()*r.Float64())]
}

func corpusSentence(r *rand.Rand, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = pick(r)
	}
	return strings.Join(words, " ")
}

// TestTextIndexRanksAsPostgreSQL: textindex's ts_rank is PostgreSQL's, to the bit, for
// queries of every shape a search sends (the AND of every term, the OR of the ANDs of each m,
// the OR of all) over tsvectors with weights and repeated lexemes.
func TestTextIndexRanksAsPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	r := rand.New(rand.NewPCG(17, 3))
	for i := 0; i < 150; i++ {
		title, body := corpusSentence(r, 1+r.IntN(3)), corpusSentence(r, 5+r.IntN(60))
		weight := string("ABCD"[r.IntN(4)])
		var tsv string
		require.NoError(t, s.QueryRowForTest(ctx, `SELECT (setweight(to_tsvector('english', $1), $2::"char") || to_tsvector('english', $3))::text`,
			[]any{title, weight, body}, &tsv))
		var b textindex.Builder
		require.NoError(t, b.Add(tsv))
		x := b.Index()
		var lexemes []string
		require.NoError(t, s.QueryRowForTest(ctx, `SELECT tsvector_to_array(to_tsvector('english', $1))`, []any{corpusSentence(r, 1+r.IntN(5))}, &lexemes))
		if len(lexemes) == 0 {
			continue
		}
		for m := len(lexemes); m >= 1; m-- {
			var want float32
			require.NoError(t, s.QueryRowForTest(ctx, `SELECT ts_rank($1::tsvector, $2::tsquery)`, []any{tsv, store.AtLeast(lexemes, m)}, &want))
			var holds bool
			require.NoError(t, s.QueryRowForTest(ctx, `SELECT $1::tsvector @@ $2::tsquery`, []any{tsv, store.AtLeast(lexemes, 1)}, &holds))
			if !holds {
				continue // a search ranks only the documents that match
			}
			require.Equal(t, want, x.Rank(0, lexemes, m == len(lexemes)), "ts_rank(%s, %s)", tsv, store.AtLeast(lexemes, m))
		}
	}
}

// TestSearchInMemoryFindsWhatTheStatementsFind: over 1,200 generated chunks in two sources
// (a common word in most of them, so that a tier's candidates are capped), with another
// workspace holding the same chunks, 200 generated questions find the same chunks with the
// same ranks in memory as by the statements, in the same order but among equal ranks.
func TestSearchInMemoryFindsWhatTheStatementsFind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	r := rand.New(rand.NewPCG(5, 49))
	var chunks []store.Chunk
	for i := 0; i < 1200; i++ {
		chunks = append(chunks, store.Chunk{URL: fmt.Sprintf("https://bakery.example/%d", i), Title: corpusSentence(r, 1+r.IntN(2)),
			Content: corpusSentence(r, 10+r.IntN(80))})
	}
	ws, agent, _ := knowledgeAgent(t, s, "en", chunks[:700]...)
	plan, err := s.PlanSearch(ctx, ws, agent, "bread")
	require.NoError(t, err)
	second, err := s.AddSource(ctx, ws, plan.Base, store.NewSource{Type: "website", URL: "https://bakery.example/more", Status: "ready"})
	require.NoError(t, err)
	require.NoError(t, s.AddChunks(ctx, ws, second.ID, chunks[700:]))
	otherWS, _, _ := knowledgeAgent(t, s, "en-US", chunks...) // the same chunks, another workspace

	for i := 0; i < 200; i++ {
		question := corpusSentence(r, 1+r.IntN(5))
		if i%10 == 0 {
			question += " the unheardof"
		}
		plan, err := s.PlanSearch(ctx, ws, agent, question)
		require.NoError(t, err)
		inDB, err := s.SearchKnowledgeInDatabase(ctx, ws, plan, 5)
		require.NoError(t, err)
		inMemory, ok := s.SearchKnowledgeInMemory(ws, plan, 5)
		require.True(t, ok, "the knowledge base is loaded")
		require.Len(t, inMemory, len(inDB), "question %q", question)
		if len(inDB) == 0 {
			continue
		}
		query := tierQuery(t, s, ws, plan, inDB[0])
		for j := range inDB {
			require.Equal(t, rankOf(t, s, ws, inDB[j], query), rankOf(t, s, ws, inMemory[j], query),
				"question %q, result %d: %s against %s", question, j, inDB[j].URL, inMemory[j].URL)
		}
		for _, c := range inMemory {
			require.NotContains(t, c.URL, otherWS.String())
		}
	}
}

// tierQuery is the tsquery of the tier a search's first result came from: the AND of each m
// of the terms, m the number of them the result holds (every result of a tier holds as many,
// since the tiers above found none), or any one of them.
func tierQuery(t *testing.T, s *store.Store, ws uuid.UUID, plan store.SearchPlan, first store.Chunk) string {
	terms := plan.Lexemes[:min(len(plan.Lexemes), 6)]
	var held int
	require.NoError(t, s.QueryRowForTest(context.Background(),
		`SELECT count(*) FROM knowledge_chunks k, unnest(tsvector_to_array(k.tsv)) l WHERE k.workspace_id = $1 AND k.url = $2 AND l = ANY($3::text[])`,
		[]any{ws, first.URL, terms}, &held))
	return store.AtLeast(terms, max(held, 1))
}

func rankOf(t *testing.T, s *store.Store, ws uuid.UUID, c store.Chunk, query string) float32 {
	var rank float32
	require.NoError(t, s.QueryRowForTest(context.Background(),
		`SELECT ts_rank(k.tsv, $3::tsquery) FROM knowledge_chunks k WHERE k.workspace_id = $1 AND k.url = $2`, []any{ws, c.URL, query}, &rank))
	return rank
}

// TestSearchInMemoryIsNeverStale: a chunk added, the chunks of a source replaced, a source
// deleted: each is found (or no longer found) by the next search, which the copy in memory
// of the knowledge base as it was cannot serve, and then by the copy loaded after it.
func TestSearchInMemoryIsNeverStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, agent, source := knowledgeAgent(t, s, "en",
		store.Chunk{URL: "u1", Title: "Hours", Content: "We are closed on Sunday."},
		store.Chunk{URL: "u2", Title: "Cakes", Content: "Birthday cakes are ordered two days ahead."})
	store.ReloadSearchAtOnce(s)
	inMemory := func(question string) []string {
		plan, err := s.PlanSearch(ctx, ws, agent, question)
		require.NoError(t, err)
		found, ok := s.SearchKnowledgeInMemory(ws, plan, 5)
		require.True(t, ok)
		return titles(found)
	}
	search := func(question string) []string {
		found, err := s.SearchKnowledge(ctx, ws, agent, question, 5)
		require.NoError(t, err)
		return titles(found)
	}
	require.Equal(t, []string{"Hours"}, inMemory("open on sundays"))

	require.NoError(t, s.AddChunks(ctx, ws, source, []store.Chunk{{URL: "u3", Title: "Brunch", Content: "Brunch is served on Sundays."}}))
	require.ElementsMatch(t, []string{"Hours", "Brunch"}, search("sunday"), "a chunk added is found at once")
	require.ElementsMatch(t, []string{"Hours", "Brunch"}, inMemory("sunday"))

	require.NoError(t, s.ReplaceChunks(ctx, ws, source))
	require.Empty(t, search("sunday"), "chunks replaced are gone at once")
	require.NoError(t, s.AddChunks(ctx, ws, source, []store.Chunk{{URL: "u4", Title: "Sunday", Content: "Open on Sunday from nine."}}))
	require.Equal(t, []string{"Sunday"}, search("sunday"))
	require.Equal(t, []string{"Sunday"}, inMemory("sunday"))

	require.NoError(t, s.DeleteSourceForTest(ctx, ws, source))
	require.Empty(t, search("sunday"), "a source deleted takes its chunks out of the search at once")
}
