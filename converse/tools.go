package converse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/agent"
	"switchboard/blueprint"
	"switchboard/inputguard"
	"switchboard/llm"
	"switchboard/netguard"
	"switchboard/store"
)

// Limits of the agent tools.
const (
	// SearchResults is how many chunks search_knowledge_base returns at most.
	SearchResults = 5
	// chunkChars bounds the text of one chunk given to the model.
	chunkChars = 2000
	// HTTPTimeout bounds one http_webhook or http_request call, connection included.
	HTTPTimeout = 10 * time.Second
	// HTTPResponseCap is how much of a response body the model gets; the rest is cut off
	// (and the result says so).
	HTTPResponseCap = 16 << 10
	// httpRequestCap bounds the JSON body the tools send.
	httpRequestCap = 64 << 10
)

// turnNotes is what the tools of one turn observed, for the rules that run after it.
type turnNotes struct {
	mu       sync.Mutex
	searches int // knowledge searches run
	hits     int // chunks they found
	labels   []string
}

func (n *turnNotes) searched(found int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.searches++
	n.hits += found
}

// searchedInVain reports whether the turn searched its knowledge base and found nothing.
func (n *turnNotes) searchedInVain() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.searches > 0 && n.hits == 0
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// tools builds the tools a turn offers: those of the blueprint that are enabled, each with
// its configuration. A tool that cannot work (apply_label without labels, an http tool without
// a url) is not offered. Names are the tool's type, or its config `name`; a repeated name
// gets a suffix (_2, _3, ...).
//
// search names its search_knowledge_base tools (for recallSearches), and the one to run
// before the model is asked (see Service.prefetch).
func (s *Service) tools(tc turnContext, notes *turnNotes) (_ *agent.Tools, search searchTools, _ error) {
	var list []agent.Tool
	taken := map[string]int{}
	for _, t := range tc.bp.Tools {
		if !t.Enabled {
			continue
		}
		tool, ok := s.tool(tc, t, notes)
		if !ok {
			continue
		}
		if n, ok := t.Config["name"].(string); ok && toolName.MatchString(n) {
			tool.Name = n
		}
		if d, ok := t.Config["description"].(string); ok && strings.TrimSpace(d) != "" {
			tool.Description = d
		}
		taken[tool.Name]++
		if k := taken[tool.Name]; k > 1 {
			tool.Name = fmt.Sprintf("%s_%d", tool.Name, k)
		}
		if t.Type == blueprint.ToolSearchKnowledgeBase {
			if len(search.names) == 0 && prefetches(t) {
				search.prefetch = tool.Name
			}
			search.names = append(search.names, tool.Name)
		}
		list = append(list, tool)
	}
	tools, err := agent.NewTools(list...)
	return tools, search, err
}

// searchTools are the names of a turn's search_knowledge_base tools.
type searchTools struct {
	names []string
	// prefetch is the knowledge search run before the model is asked: the first enabled
	// search_knowledge_base tool, unless its config says `prefetch: false`; "" when none.
	prefetch string
}

// prefetches reports whether a search_knowledge_base tool searches before the model is asked:
// unless its config sets `prefetch: false`.
func prefetches(t blueprint.Tool) bool {
	on, set := t.Config["prefetch"].(bool)
	return on || !set
}

// prefetchReserve is the room kept in a turn's history window for the prefetched search
// (Service.prefetch): SearchResults passages of chunkChars characters, their titles and URLs
// and the JSON around them, at about one byte a character. A result that is larger (text of
// several bytes a character) makes the pipeline read a smaller window itself.
const prefetchReserve = SearchResults*(chunkChars+400) + 200

// prefetch runs the turn's knowledge search with the visitor's own words before the model is
// asked, and returns it as the model's call of the tool named name and its result (the turn's
// agent.Turn.Prelude), so the usual turn, a question about the business, costs one model call
// instead of two: the model answers from the passages, or searches again with other words.
// A search that finds nothing gives no prelude and is not counted (the model decides, as
// without it); one that fails is logged and the turn goes on without it.
func (s *Service) prefetch(tc turnContext, notes *turnNotes, name, message string) ([]llm.Message, error) {
	if name == "" {
		return nil, nil
	}
	var chunks []store.Chunk
	var err error
	if tc.search != nil { // planned with the conversation's read, for this message and agent
		chunks, err = s.store.SearchKnowledgeWith(tc.ctx, tc.agent.WorkspaceID, *tc.search, SearchResults)
	} else {
		chunks, err = s.Search(tc.ctx, tc.agent.WorkspaceID, tc.agent.ID, message, SearchResults)
	}
	if err != nil {
		if ctxErr := tc.ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		s.log.WarnContext(tc.ctx, "the knowledge search before the model call failed; the model searches itself", "agent_id", tc.agent.ID.String(), "error", err.Error())
		return nil, nil
	}
	if len(chunks) == 0 {
		return nil, nil
	}
	notes.searched(len(chunks))
	args, err := json.Marshal(map[string]string{"query": message})
	if err != nil {
		return nil, err
	}
	result, err := json.Marshal(searchResult(chunks))
	if err != nil {
		return nil, err
	}
	id := "kb_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	return []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}},
		{Role: llm.RoleTool, ToolResults: []llm.ToolResult{{CallID: id, Name: name, Content: inputguard.Scrub(string(result))}}},
	}, nil
}

// searchOutput is what search_knowledge_base gives the model.
type searchOutput struct {
	Results []searchHit `json:"results"`
	Note    string      `json:"note,omitempty"`
}

type searchHit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Content string `json:"content"`
}

// searchResult is the tool's result for the chunks a search found.
func searchResult(chunks []store.Chunk) searchOutput {
	out := searchOutput{Results: make([]searchHit, 0, len(chunks))}
	for _, c := range chunks {
		out.Results = append(out.Results, searchHit{Title: c.Title, URL: c.URL, Content: truncate(c.Content, chunkChars)})
	}
	if len(chunks) == 0 {
		out.Note = "Nothing in the knowledge base matches. Do not guess: say you don't know."
	}
	return out
}

func (s *Service) tool(tc turnContext, t blueprint.Tool, notes *turnNotes) (agent.Tool, bool) {
	switch t.Type {
	case blueprint.ToolSearchKnowledgeBase:
		return s.searchTool(tc, notes), true
	case blueprint.ToolApplyLabel:
		if len(tc.bp.Labels) == 0 {
			return agent.Tool{}, false
		}
		return s.labelTool(tc, notes), true
	case blueprint.ToolHTTPWebhook, blueprint.ToolHTTPRequest:
		cfg, err := httpConfig(t)
		if err != nil {
			s.log.WarnContext(tc.ctx, "an http tool of the agent is not offered", "agent_id", tc.agent.ID.String(), "error", err.Error())
			return agent.Tool{}, false
		}
		return s.httpTool(tc, t.Type, cfg), true
	}
	return agent.Tool{}, false
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func (s *Service) searchTool(tc turnContext, notes *turnNotes) agent.Tool {
	return agent.Tool{
		Name:        string(blueprint.ToolSearchKnowledgeBase),
		Description: "Search the knowledge base of this business (its website and documents). Returns the best matching passages with their source URL. Search before answering questions about the business.",
		Parameters:  schema(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for: a few keywords"}},"required":["query"]}`),
		Class:       agent.Safe,
		Run: func(ctx context.Context, call agent.Call) (any, error) {
			var in struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(call.Arguments, &in); err != nil || strings.TrimSpace(in.Query) == "" {
				return nil, errors.New("give a query")
			}
			chunks, err := s.Search(ctx, tc.agent.WorkspaceID, tc.agent.ID, in.Query, SearchResults)
			if err != nil {
				return nil, err
			}
			notes.searched(len(chunks))
			return searchResult(chunks), nil
		},
	}
}

// Search finds an agent's knowledge chunks for a query, in the agent's language: chunks
// holding every word first; when none does, those holding the most of them.
func (s *Service) Search(ctx context.Context, ws, agentID uuid.UUID, query string, limit int) ([]store.Chunk, error) {
	return s.store.SearchKnowledge(ctx, ws, agentID, query, limit)
}

func (s *Service) labelTool(tc turnContext, notes *turnNotes) agent.Tool {
	enum, _ := json.Marshal(tc.bp.Labels)
	return agent.Tool{
		Name:        string(blueprint.ToolApplyLabel),
		Description: "Label this conversation with one of the business's labels, to classify it for the team.",
		Parameters:  schema(`{"type":"object","properties":{"label":{"type":"string","enum":` + string(enum) + `}},"required":["label"]}`),
		Class:       agent.Safe,
		Run: func(ctx context.Context, call agent.Call) (any, error) {
			var in struct {
				Label string `json:"label"`
			}
			_ = json.Unmarshal(call.Arguments, &in)
			if !slices.Contains(tc.bp.Labels, in.Label) {
				return nil, fmt.Errorf("%q is not one of the labels: %s", in.Label, strings.Join(tc.bp.Labels, ", "))
			}
			labels, err := s.store.AddConversationLabel(ctx, tc.agent.WorkspaceID, tc.conv.ID, in.Label)
			if err != nil {
				return nil, err
			}
			notes.mu.Lock()
			notes.labels = labels
			notes.mu.Unlock()
			return map[string]any{"applied": in.Label, "labels": labels}, nil
		},
	}
}

// httpToolConfig is the config of an http_webhook or http_request tool.
type httpToolConfig struct {
	URL     string
	Method  string
	Headers map[string]string
}

func httpConfig(t blueprint.Tool) (httpToolConfig, error) {
	cfg := httpToolConfig{Method: http.MethodPost, Headers: map[string]string{}}
	if t.Type == blueprint.ToolHTTPRequest {
		cfg.Method = http.MethodGet
	}
	u, _ := t.Config["url"].(string)
	parsed, err := url.Parse(u)
	if u == "" || err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return cfg, fmt.Errorf("%s: config.url must be an http(s) URL", t.Type)
	}
	cfg.URL = u
	if m, ok := t.Config["method"].(string); ok && m != "" {
		cfg.Method = strings.ToUpper(m)
	}
	if !slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, cfg.Method) {
		return cfg, fmt.Errorf("%s: config.method %q is not GET, POST, PUT, PATCH or DELETE", t.Type, cfg.Method)
	}
	if h, ok := t.Config["headers"].(map[string]any); ok {
		for k, v := range h {
			value := fmt.Sprint(v)
			if strings.ContainsAny(k+value, "\r\n") {
				return cfg, fmt.Errorf("%s: config.headers.%s holds a line break", t.Type, k)
			}
			cfg.Headers[k] = value
		}
	}
	return cfg, nil
}

func (s *Service) httpTool(tc turnContext, typ blueprint.ToolType, cfg httpToolConfig) agent.Tool {
	tool := agent.Tool{Name: string(typ), Class: agent.Safe}
	if typ == blueprint.ToolHTTPWebhook {
		tool.Description = "Send data to the business's system (a webhook). Give the data to send as `payload`."
		tool.Parameters = schema(`{"type":"object","properties":{"payload":{"type":"object","description":"The data to send"}},"required":["payload"]}`)
	} else {
		tool.Description = "Call the business's API and read its answer. Optional `query` parameters are added to the address; `body` is sent as JSON (not with GET)."
		tool.Parameters = schema(`{"type":"object","properties":{"query":{"type":"object","additionalProperties":{"type":"string"}},"body":{"type":"object"}}}`)
	}
	tool.Run = func(ctx context.Context, call agent.Call) (any, error) {
		var in struct {
			Payload json.RawMessage   `json:"payload"`
			Query   map[string]string `json:"query"`
			Body    json.RawMessage   `json:"body"`
		}
		if len(call.Arguments) > 0 {
			if err := json.Unmarshal(call.Arguments, &in); err != nil {
				return nil, errors.New("the arguments must be a JSON object")
			}
		}
		target, err := url.Parse(cfg.URL)
		if err != nil {
			return nil, err
		}
		var body []byte
		if typ == blueprint.ToolHTTPWebhook {
			body, err = json.Marshal(map[string]any{"agent_id": tc.agent.ID.String(), "conversation_id": tc.conv.ShortID,
				"payload": json.RawMessage(orEmptyObject(in.Payload))})
		} else {
			q := target.Query()
			for k, v := range in.Query {
				q.Set(k, v)
			}
			target.RawQuery = q.Encode()
			if cfg.Method != http.MethodGet && len(in.Body) > 0 {
				body = in.Body
			}
		}
		if err != nil {
			return nil, err
		}
		if len(body) > httpRequestCap {
			return nil, fmt.Errorf("the request body is over %d bytes", httpRequestCap)
		}
		return s.call(ctx, cfg, target.String(), body)
	}
	return tool
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage(`{}`)
	}
	return b
}

// call makes one outbound request: the URL is checked by netguard first, and every
// connection is checked again where it is dialled; redirects are not followed.
func (s *Service) call(ctx context.Context, cfg httpToolConfig, target string, body []byte) (any, error) {
	if err := s.guard.CheckURL(ctx, target); err != nil {
		return nil, fmt.Errorf("the address is not allowed: %s", strings.TrimPrefix(err.Error(), netguard.ErrBlocked.Error()+": "))
	}
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cfg.Method, target, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "Switchboard-Agent/1.0")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.guard.Client(HTTPTimeout).Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no answer within %s", HTTPTimeout)
		}
		return nil, fmt.Errorf("the request failed: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, HTTPResponseCap+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer failed: %v", err)
	}
	truncated := len(raw) > HTTPResponseCap
	if truncated {
		raw = raw[:HTTPResponseCap]
	}
	text := strings.ToValidUTF8(string(raw), "")
	out := map[string]any{"status": resp.StatusCode, "content_type": resp.Header.Get("Content-Type"), "body": text}
	if truncated {
		out["truncated"] = true
	}
	return out, nil
}

// truncate keeps at most n characters of s.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
