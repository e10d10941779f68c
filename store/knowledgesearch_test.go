package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/store"
	"switchboard/store/storetest"
)

func TestAtLeastIsTheOrOfEachCombination(t *testing.T) {
	t.Parallel()
	terms := []string{"open", "sunday", "brunch"}
	require.Equal(t, "'open' & 'sunday' & 'brunch'", store.AtLeast(terms, 3))
	require.Equal(t, "'open' & 'sunday' | 'open' & 'brunch' | 'sunday' & 'brunch'", store.AtLeast(terms, 2))
	require.Equal(t, "'open' | 'sunday' | 'brunch'", store.AtLeast(terms, 1))
	require.Equal(t, `'o''clock' | 'back\\slash'`, store.AtLeast([]string{"o'clock", `back\slash`}, 1), "quotes and backslashes are escaped")
}

// knowledgeAgent stores an agent in the language with one source holding the chunks.
func knowledgeAgent(t *testing.T, s *store.Store, language string, chunks ...store.Chunk) (ws, agent, source uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	w, err := s.CreateWorkspace(ctx, "bakery-"+language, 0)
	require.NoError(t, err)
	a, sources, err := s.CreateAgent(ctx, w.ID, "Bakery", []byte(`{"name":"Bakery","language":"`+language+`"}`),
		[]store.NewSource{{Type: "website", URL: "https://bakery.example", Status: "ready"}})
	require.NoError(t, err)
	require.NoError(t, s.AddChunks(ctx, w.ID, sources[0].ID, chunks))
	return w.ID, a.ID, sources[0].ID
}

func titles(chunks []store.Chunk) []string {
	out := []string{}
	for _, c := range chunks {
		out = append(out, c.Title)
	}
	return out
}

// TestKnowledgeSearchStemsInTheAgentsLanguage: an English agent's "Sundays" finds "Sunday"
// and stop words do not have to match; a French agent's knowledge is stemmed in French; a
// language PostgreSQL has no configuration for is matched word for word.
func TestKnowledgeSearchStemsInTheAgentsLanguage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)

	ws, agent, _ := knowledgeAgent(t, s, "en-GB",
		store.Chunk{URL: "https://bakery.example/hours", Title: "Hours", Content: "We are closed on Sunday and open Monday to Saturday."},
		store.Chunk{URL: "https://bakery.example/cakes", Title: "Cakes", Content: "Birthday cakes are ordered two days ahead."})
	found, err := s.SearchKnowledge(ctx, ws, agent, "Are you open on Sundays?", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Hours"}, titles(found))
	found, err = s.SearchKnowledge(ctx, ws, agent, "ordering a cake", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Cakes"}, titles(found), "ordering finds ordered, cake finds cakes")

	ws, agent, _ = knowledgeAgent(t, s, "fr",
		store.Chunk{URL: "https://boulangerie.example/horaires", Title: "Horaires", Content: "Nous sommes fermés le dimanche."})
	found, err = s.SearchKnowledge(ctx, ws, agent, "ouvert les dimanches ?", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Horaires"}, titles(found))

	ws, agent, _ = knowledgeAgent(t, s, "ja",
		store.Chunk{URL: "https://example.jp/a", Title: "A", Content: "sunday hours"})
	found, err = s.SearchKnowledge(ctx, ws, agent, "sundays", 5)
	require.NoError(t, err)
	require.Empty(t, found, "no stemming without a configuration for the language")
	found, err = s.SearchKnowledge(ctx, ws, agent, "sunday", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"A"}, titles(found))
}

// TestKnowledgeSearchRanksByHowManyTermsMatch: chunks holding every term come first and
// alone; when none does, those holding the most terms; a query of stop words finds nothing.
func TestKnowledgeSearchRanksByHowManyTermsMatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, agent, _ := knowledgeAgent(t, s, "en",
		store.Chunk{URL: "u1", Title: "Two", Content: "Gluten free bread is baked daily."},
		store.Chunk{URL: "u2", Title: "One", Content: "Our bread is sourdough."},
		store.Chunk{URL: "u3", Title: "Other", Content: "Parking is behind the shop."})

	found, err := s.SearchKnowledge(ctx, ws, agent, "gluten free bread", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Two"}, titles(found), "every term: only the chunk that holds them all")

	found, err = s.SearchKnowledge(ctx, ws, agent, "gluten free bread vegan", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Two"}, titles(found), "three of four terms beat one")

	found, err = s.SearchKnowledge(ctx, ws, agent, "sourdough parking", 5)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"One", "Other"}, titles(found), "any one term when no chunk holds two")

	found, err = s.SearchKnowledge(ctx, ws, agent, "what is it", 5)
	require.NoError(t, err)
	require.Empty(t, found)

	other, err := s.CreateWorkspace(ctx, "other", 0)
	require.NoError(t, err)
	found, err = s.SearchKnowledge(ctx, other.ID, agent, "bread", 5)
	require.NoError(t, err)
	require.Empty(t, found, "another workspace finds nothing of this agent's")
}

// TestKnowledgeSearchRanksRepeatedTermsFirstInItsLastTier: when no chunk holds two of the terms,
// the chunks in which one occurs more than once come first, ranked, and those in which one
// occurs once fill what room the limit leaves; of five terms, a chunk holding three is
// found before any holding one.
func TestKnowledgeSearchRanksRepeatedTermsFirstInItsLastTier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, agent, _ := knowledgeAgent(t, s, "en",
		store.Chunk{URL: "u1", Title: "Rye", Content: "Rye bread, rye flour and more rye."},
		store.Chunk{URL: "u2", Title: "Cake", Content: "Cake of the day; a cake to order."},
		store.Chunk{URL: "u3", Title: "Seller", Content: "We sell rye."},
		store.Chunk{URL: "u4", Title: "Order", Content: "Ask for cake."},
		store.Chunk{URL: "u5", Title: "Hours", Content: "Open on Sundays, closed on holidays, parking behind."})

	found, err := s.SearchKnowledge(ctx, ws, agent, "rye cake", 5)
	require.NoError(t, err)
	require.Len(t, found, 4)
	require.ElementsMatch(t, []string{"Rye", "Cake"}, titles(found[:2]), "repeated terms rank first")
	require.ElementsMatch(t, []string{"Seller", "Order"}, titles(found[2:]), "then a term once (a title counts too)")

	found, err = s.SearchKnowledge(ctx, ws, agent, "rye cake", 3)
	require.NoError(t, err)
	require.Len(t, found, 3, "the limit holds across both halves")
	require.ElementsMatch(t, []string{"Rye", "Cake"}, titles(found[:2]))

	found, err = s.SearchKnowledge(ctx, ws, agent, "rye cake", 2)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"Rye", "Cake"}, titles(found), "no room: nothing of the second half")

	found, err = s.SearchKnowledge(ctx, ws, agent, "sundays holidays parking rye cake", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Hours"}, titles(found), "three of five terms beat one")
}

// TestKnowledgeIsIndexedAgainWhenTheAgentsLanguageChanges: the chunks follow the agent's
// language in the same transaction as the change.
func TestKnowledgeIsIndexedAgainWhenTheAgentsLanguageChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, agent, _ := knowledgeAgent(t, s, "ja", store.Chunk{URL: "u", Title: "Hours", Content: "Closed on Sunday."})
	found, err := s.SearchKnowledge(ctx, ws, agent, "sundays", 5)
	require.NoError(t, err)
	require.Empty(t, found)

	a, err := s.AgentByID(ctx, ws, agent)
	require.NoError(t, err)
	_, err = s.UpdateAgent(ctx, ws, agent, store.AgentUpdate{Name: a.Name, Status: a.Status, Blueprint: []byte(`{"name":"Bakery","language":"en-US"}`)})
	require.NoError(t, err)
	found, err = s.SearchKnowledge(ctx, ws, agent, "sundays", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Hours"}, titles(found))
}

// TestAgentTurnStatePlansTheSearchOfItsMessage: read with a search query, a turn's state
// carries the plan SearchKnowledge makes (the same chunks found from it, in the agent's
// language); read without one, no plan.
func TestAgentTurnStatePlansTheSearchOfItsMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.New(t)
	ws, agent, _ := knowledgeAgent(t, s, "en",
		store.Chunk{URL: "u1", Title: "Hours", Content: "We are open on Sunday from nine to five."},
		store.Chunk{URL: "u2", Title: "Cakes", Content: "Order a cake two days ahead."})
	conv, err := s.OpenAgentConversationWith(ctx, ws, "api", agent, nil, nil, []store.Message{{Role: "assistant", Content: "Hello!"}})
	require.NoError(t, err)

	st, err := s.AgentTurnState(ctx, ws, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20, Search: "Are you open on Sundays?"})
	require.NoError(t, err)
	require.NotNil(t, st.Search)
	require.Subset(t, st.Search.Lexemes, []string{"sunday", "open"}, "stemmed: Sundays is sunday")
	planned, err := s.SearchKnowledgeWith(ctx, ws, *st.Search, 5)
	require.NoError(t, err)
	direct, err := s.SearchKnowledge(ctx, ws, agent, "Are you open on Sundays?", 5)
	require.NoError(t, err)
	require.Equal(t, []string{"Hours"}, titles(planned))
	require.Equal(t, direct, planned)
	require.Len(t, st.History, 1, "the window is read as without a search")

	st, err = s.AgentTurnState(ctx, ws, store.TurnRead{Ref: conv.ShortID, MaxMessages: 100, MaxBytes: 1 << 20})
	require.NoError(t, err)
	require.Nil(t, st.Search)
}
