package bench

// BenchmarkAgentTurn is a deployed agent's turn (POST /api/agents/{id}/chat, issue 49 item 3)
// in process, as bench/run.sh agents drives it over HTTP: business hours, blocked topics, an
// after_2_failed_attempts escalation, labels and search_knowledge_base over
// BENCH_AGENT_CHUNKS (default 2,000) chunks of an uploaded corpus; the model (beta-5.4-mini,
// the mock's agent@...,search=1) calls the search, then answers: two vendor calls a turn.
// A conversation is continued for 5 turns, then a new one opened (agentload's mix). Its
// ns/op and allocs/op are the server's side of a turn; BenchmarkAgentTurnParallel keeps 64
// turns in flight.
//
//	BENCH_DATABASE_URL=... BENCH_MOCK_URL=... go test -run '^$' -bench 'AgentTurn' -benchtime 3s ./bench/

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/bench/benchkit"
)

// agentModel is the catalog model the benchmark's agent uses; runMain points it at the
// mock's searching agent.
const (
	agentModel    = "beta-5.4-mini"
	agentUpstream = "agent@chunks=5,search=1"
)

var agentEnv struct {
	once  sync.Once
	id    string
	words []string // words of the corpus, for the visitors' questions
	err   error
}

// agentSetup uploads the corpus, creates the agent and waits for its knowledge to be ready.
func agentSetup() (string, []string, error) {
	chunks := 2_000
	if v := os.Getenv("BENCH_AGENT_CHUNKS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return "", nil, fmt.Errorf("BENCH_AGENT_CHUNKS: %w", err)
		}
		chunks = n
	}
	// Words of two to four syllables, paragraphs of about 800 characters (one chunk each).
	syl := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "ja", "ke", "li"}
	var words []string
	for i := len(syl); len(words) < 5_000; i++ {
		w := ""
		for n := i; n > 0; n /= len(syl) {
			w += syl[n%len(syl)]
		}
		words = append(words, w+"n")
	}
	rng := rand.New(rand.NewPCG(49, 1))
	zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(words)-1))
	var doc bytes.Buffer
	for i := range chunks {
		if i > 0 {
			doc.WriteString("\n\n")
		}
		start := doc.Len()
		for doc.Len()-start < 800 {
			if doc.Len() > start {
				doc.WriteByte(' ')
			}
			doc.WriteString(words[zipf.Uint64()])
		}
		doc.WriteByte('.')
	}
	const path = "bench/handbook.txt"
	var up struct{ ID string }
	if err := apiCall(http.MethodPost, "/api/uploads?filename="+path, "text/plain; charset=utf-8", doc.Bytes(), &up); err != nil {
		return "", nil, err
	}
	var created struct {
		AgentID string `json:"agentId"`
	}
	if err := apiCall(http.MethodPost, "/api/agents", "application/yaml", []byte(fmt.Sprintf(benchkit.Blueprint, agentModel, path)), &created); err != nil {
		return "", nil, err
	}
	for began := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		var got struct {
			Agent struct {
				KnowledgeSources []struct{ Status string } `json:"knowledgeSources"`
			} `json:"agent"`
		}
		if err := apiCall(http.MethodGet, "/api/agents/"+created.AgentID, "", nil, &got); err != nil {
			return "", nil, err
		}
		if s := got.Agent.KnowledgeSources; len(s) == 1 && s[0].Status == "ready" {
			break
		} else if len(s) == 1 && s[0].Status == "failed" || time.Since(began) > 5*time.Minute {
			return "", nil, fmt.Errorf("the corpus was not ingested: %+v", s)
		}
	}
	return created.AgentID, words[50:1_000], nil // not the commonest words, as a reader leaves out "the"
}

func apiCall(method, path, contentType string, body []byte, out any) error {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	if rec.Code/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return json.Unmarshal(rec.Body.Bytes(), out)
}

func needAgent(b *testing.B) {
	b.Helper()
	need(b)
	agentEnv.once.Do(func() { agentEnv.id, agentEnv.words, agentEnv.err = agentSetup() })
	if agentEnv.err != nil {
		b.Fatal(agentEnv.err)
	}
}

// visitor is one client's conversation: continued for 5 turns, then a new one.
type visitor struct {
	rng   *rand.Rand
	conv  string
	turns int
}

func (v *visitor) turn(b *testing.B) {
	q := agentEnv.words[v.rng.IntN(len(agentEnv.words))] + " " + agentEnv.words[v.rng.IntN(len(agentEnv.words))]
	body := `{"message":"` + q + `"}`
	if v.conv != "" {
		body = `{"message":"` + q + `","conversation_id":"` + v.conv + `"}`
	}
	req := httptest.NewRequest(http.MethodPost, "/api/agents/"+agentEnv.id+"/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.key)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	env.handler.ServeHTTP(rec, req)
	var a struct {
		ConversationID string `json:"conversation_id"`
		Reply          string `json:"reply"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &a) != nil || a.Reply == "" {
		b.Fatalf("agent chat: %d %s", rec.Code, rec.Body.String())
	}
	v.conv, v.turns = a.ConversationID, v.turns+1
	if v.turns == 5 {
		v.conv, v.turns = "", 0
	}
}

func BenchmarkAgentTurn(b *testing.B) {
	needAgent(b)
	v := &visitor{rng: rand.New(rand.NewPCG(1, 2))}
	b.ReportAllocs()
	for b.Loop() {
		v.turn(b)
	}
}

func BenchmarkAgentTurnParallel(b *testing.B) {
	needAgent(b)
	b.ReportAllocs()
	b.SetParallelism(32)
	var seed sync.Mutex
	n := uint64(0)
	b.RunParallel(func(pb *testing.PB) {
		seed.Lock()
		n++
		v := &visitor{rng: rand.New(rand.NewPCG(n, 3))}
		seed.Unlock()
		for pb.Next() {
			v.turn(b)
		}
	})
}
