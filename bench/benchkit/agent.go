package benchkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Corpus is the knowledge of the run: synthetic paragraphs of words drawn from a vocabulary
// with a Zipf distribution (as words are in real text, like store/knowledgebench_test.go),
// each long enough (800 to 900 characters) that the server's chunker (knowledge.ChunkChars,
// 1,500) packs no two together: one paragraph, one chunk.
type Corpus struct {
	words []string
	used  []bool // words[i] is in the document
	zipf  *rand.Zipf
}

// NewCorpus makes a corpus of vocabulary made-up words drawn with a Zipf law, the same for
// the same seed, so that runs upload the same knowledge and ask the same questions.
func NewCorpus(seed uint64, vocabulary int) *Corpus {
	syllables := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "ja", "ke", "li", "mo", "nu", "pe", "ra"}
	c := &Corpus{}
	for i := 0; len(c.words) < vocabulary; i++ {
		w := ""
		for n := i; ; n /= len(syllables) {
			w += syllables[n%len(syllables)]
			if n < len(syllables) {
				break
			}
		}
		if len(w) >= 4 { // two syllables at least: no stop words, no one-letter stems
			c.words = append(c.words, w+"n")
		}
	}
	c.used = make([]bool, len(c.words))
	c.zipf = rand.NewZipf(rand.New(rand.NewPCG(seed, 1)), 1.1, 1, uint64(vocabulary-1))
	return c
}

// Document is n paragraphs separated by blank lines.
func (c *Corpus) Document(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString("\n\n")
		}
		start := b.Len()
		for b.Len()-start < 800 {
			if b.Len() > start {
				b.WriteByte(' ')
			}
			i := c.zipf.Uint64()
			c.used[i] = true
			b.WriteString(c.words[i])
		}
		b.WriteByte('.')
	}
	return b.Bytes()
}

// Query is 2 or 3 words of the document, not among its 50 most common (which every search
// would match), as a visitor's question names a few specific words. Words of the vocabulary
// the document does not hold are never asked: a search that finds nothing counts towards
// the escalation rule, which would then answer in place of the model.
func (c *Corpus) Query(r *rand.Rand) string {
	n := 2 + r.IntN(2)
	q := make([]string, 0, n)
	for len(q) < n {
		// A rank from r (each client has its own: rand.Zipf is not safe for concurrent use),
		// skewed towards the common words (the cube of a uniform draw).
		i := int(float64(len(c.words)) * r.Float64() * r.Float64() * r.Float64())
		if i >= 50 && c.used[i] {
			q = append(q, c.words[i])
		}
	}
	return strings.Join(q, " ")
}

// Blueprint is the agent of the run: open every day of the week (00:00 to 23:59 UTC, so the
// after-hours rule is checked and passes), two blocked topics, an escalation rule, labels,
// search_knowledge_base and apply_label, its knowledge the uploaded corpus, on the model
// that searches first (MODELS_FILE: upstream "agent@...,search=1").
const Blueprint = `agent:
  name: Agent bench
  language: en
  persona:
    display_name: Bench
    tone: friendly
    greeting: Hi! Ask me anything about the handbook.
  llm:
    provider: beta
    model: %s
    temperature: 0
    max_tokens: 256
    system_prompt: You answer questions about the handbook from the knowledge base, in one short paragraph.
  knowledge_base:
    sources:
      - type: file_upload
        path: %s
  channels:
    - type: webchat
  business_rules:
    business_hours:
      timezone: UTC
      schedule:
        monday: {start: "00:00", end: "23:59"}
        tuesday: {start: "00:00", end: "23:59"}
        wednesday: {start: "00:00", end: "23:59"}
        thursday: {start: "00:00", end: "23:59"}
        friday: {start: "00:00", end: "23:59"}
        saturday: {start: "00:00", end: "23:59"}
        sunday: {start: "00:00", end: "23:59"}
      after_hours_message: We are closed; leave your email and we will write back.
    escalation:
      enabled: true
      trigger: after_2_failed_attempts
      action: email_notification
      notification_email: leads@bench.example
    blocked_topics:
      - competitor pricing
      - legal advice
  labels:
    - question
    - complaint
    - vip
  tools:
    - type: search_knowledge_base
    - type: apply_label
`

// Agent is what a load needs: the agent and its webchat deployment.
type Agent struct {
	AgentID, DeploymentID string
	Ingest                time.Duration
}

// SetupAgent uploads the corpus (POST /api/uploads, one text file), creates the agent naming it
// (POST /api/agents), waits for the source to be ingested (GET /api/agents/{id}) and deploys
// the agent on webchat (POST /api/agents/{id}/deployments, the route of deploy_agent).
func SetupAgent(ctx context.Context, server, key, model string, doc []byte) (Agent, error) {
	var res Agent
	const path = "bench/handbook.txt"
	var up struct {
		ID string `json:"id"`
	}
	if err := Call(ctx, http.MethodPost, server+"/api/uploads?filename="+path, key, "text/plain; charset=utf-8", doc, &up); err != nil {
		return res, fmt.Errorf("uploading the corpus (%d bytes): %w", len(doc), err)
	}
	var agent struct {
		AgentID string `json:"agentId"`
	}
	if err := Call(ctx, http.MethodPost, server+"/api/agents", key, "application/yaml", []byte(fmt.Sprintf(Blueprint, model, path)), &agent); err != nil {
		return res, fmt.Errorf("creating the agent: %w", err)
	}
	res.AgentID = agent.AgentID
	began := time.Now()
	for {
		var got struct {
			Agent struct {
				KnowledgeSources []struct {
					Status string  `json:"status"`
					Error  *string `json:"error"`
				} `json:"knowledgeSources"`
			} `json:"agent"`
		}
		if err := Call(ctx, http.MethodGet, server+"/api/agents/"+res.AgentID, key, "", nil, &got); err != nil {
			return res, fmt.Errorf("reading the agent: %w", err)
		}
		a := got.Agent
		if len(a.KnowledgeSources) != 1 {
			return res, fmt.Errorf("the agent has %d knowledge sources, want 1", len(a.KnowledgeSources))
		}
		s := a.KnowledgeSources[0]
		if s.Status == "ready" {
			res.Ingest = time.Since(began)
			break
		}
		if s.Status == "failed" {
			msg := ""
			if s.Error != nil {
				msg = *s.Error
			}
			return res, fmt.Errorf("ingesting the corpus failed: %s", msg)
		}
		if time.Since(began) > 10*time.Minute {
			return res, fmt.Errorf("the corpus is still %s after 10 minutes", s.Status)
		}
		time.Sleep(250 * time.Millisecond)
	}
	var dep struct {
		DeploymentID string `json:"deploymentId"`
	}
	if err := Call(ctx, http.MethodPost, server+"/api/agents/"+res.AgentID+"/deployments", key, "application/json", []byte(`{"channel":"webchat"}`), &dep); err != nil {
		return res, fmt.Errorf("deploying on webchat: %w", err)
	}
	res.DeploymentID = dep.DeploymentID
	return res, nil
}

// Call sends body to url with the key and decodes the 2xx answer into out.
func Call(ctx context.Context, method, url, key, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, b)
	}
	return json.Unmarshal(b, out)
}
