// Command agentload is the load of `bench/run.sh agents` (issue 49, items 3 and 4): a
// deployed agent's turn and the webchat embed route against stored responses, in one run.
//
//	agentload chart -o FILE [-title T] [-caption C] TABLE.txt   (chart.go)
//	agentload -server URL -key KEY -mock URL [-model beta-5.4-mini] [-chunks 10000]
//	          [-clients 64] [-rounds 10] [-round 5s] [-warmup 3s]
//
// Setup, over HTTP: the corpus (-chunks paragraphs, one chunk each) uploaded as one text
// file, an agent naming it with business hours, blocked topics, an escalation rule, labels
// and search_knowledge_base, its ingestion awaited, then the agent deployed on webchat.
// The model is the mock's search=1 model (bench/mockllm): it calls search_knowledge_base with
// the visitor's words as the query unless the request already holds a search's result. The
// server searches for the message before it asks the model (converse: the prefetch), so a
// turn costs one vendor call; a server without the prefetch (a baseline before it) two. The
// warm-up prints both figures from the mock's counters: vendor calls per turn, and the share
// of turns answered from a search (1.00: every turn searched, whoever asked for it).
//
// Then, after a warm-up of each, rounds in which the three routes run one after the other,
// each for -round as a closed loop of -clients clients, the order rotating every round:
//
//	stored   POST /v1/responses on the same model, stored (scenario 3 of bench/cmd/loadtest)
//	agent    POST /api/agents/{id}/chat
//	embed    POST /embed/{deploymentId}/chat, as the widget sends it (Origin, no key)
//
// A client of agent or embed continues its conversation (conversation_id, visitor_token)
// for 5 turns, then opens a new one: a visitor who asks a few questions, so that both the
// opening of a conversation (greeting, disclosure) and the history of a short one are in the
// mix. Every message is 2 or 3 words of the corpus.
//
// It prints each round's req/s, p50 and p99, then per route the median and the spread
// (min-max), and the ratios of issue 49 computed per round (agent/stored, embed/agent), their
// median and spread. The mock's counters check that every agent turn called the vendor
// twice (the search really ran).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"switchboard/bench/benchkit"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "chart" {
		if err := chartMain(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "agentload chart:", err)
			os.Exit(1)
		}
		return
	}
	server := flag.String("server", "", "the server's base URL")
	key := flag.String("key", "", "an API key")
	mockURL := flag.String("mock", "", "the mock vendor's base URL (its /stats checks the tool calls)")
	model := flag.String("model", "beta-5.4-mini", "the agent's and the stored responses' model (MODELS_FILE: upstream with search=1)")
	chunks := flag.Int("chunks", 10_000, "knowledge chunks (paragraphs of the uploaded corpus)")
	clients := flag.Int("clients", 64, "clients of each closed loop")
	rounds := flag.Int("rounds", 10, "rounds (each runs the three routes)")
	roundDur := flag.Duration("round", 5*time.Second, "duration of one route in a round")
	warmup := flag.Duration("warmup", 3*time.Second, "warm-up of each route before the rounds")
	deploymentFile := flag.String("deployment-file", "", "write the webchat deployment's id to this file (for bench/cmd/widgetpaint)")
	cpuFlag := flag.String("cpu", "", "NAME=PID,...: CPU per request of these processes (and their descendants) in each round")
	pprofAddr := flag.String("pprof", "", "the server's PPROF_ADDR: a CPU profile of each route's first round into -out")
	dbURL := flag.String("database-url", "", "the server's database: pg_stat_statements of each route's first round into -out")
	outDir := flag.String("out", "", "directory for the profiles and statements")
	baseline := flag.String("baseline", "", "a second server (a baseline build) measured in the same run: its routes are named base-*, and alternate with the first's")
	baseCPU := flag.String("baseline-cpu", "", "-cpu for the baseline's rounds")
	basePprof := flag.String("baseline-pprof", "", "-pprof of the baseline")
	baseDB := flag.String("baseline-database-url", "", "-database-url of the baseline")
	flag.Parse()
	if *server == "" || *key == "" {
		fmt.Fprintln(os.Stderr, "agentload: -server and -key are required")
		os.Exit(2)
	}
	targets := []*target{{url: *server, pprof: *pprofAddr, db: *dbURL}}
	if *baseline != "" {
		targets = append(targets, &target{prefix: "base-", url: *baseline, pprof: *basePprof, db: *baseDB})
	}
	for i, spec := range []string{*cpuFlag, *baseCPU}[:len(targets)] {
		w, err := benchkit.ParseCPUWatch(spec)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentload:", err)
			os.Exit(2)
		}
		if len(w) > 0 {
			w["loadgen"] = os.Getpid() // this process: its clients share the machine too
		}
		targets[i].watch = w
	}
	ctx := context.Background()
	c := benchkit.NewCorpus(49, 20_000)
	doc := c.Document(*chunks)
	var kinds []kind
	for _, t := range targets {
		srv := strings.TrimSuffix(t.url, "/")
		fmt.Fprintf(os.Stderr, "agentload: %s: uploading %d paragraphs (%.1f MB), creating and deploying the agent ...\n", srv, *chunks, float64(len(doc))/1e6)
		st, err := benchkit.SetupAgent(ctx, srv, *key, *model, doc)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentload:", err)
			os.Exit(1)
		}
		fmt.Printf("setup %s: agent %s, the corpus (%d paragraphs, %.1f MB, one upload) ingested in %s, webchat deployment %s\n",
			srv, st.AgentID, *chunks, float64(len(doc))/1e6, st.Ingest.Round(time.Millisecond), st.DeploymentID)
		if *deploymentFile != "" && t.prefix == "" {
			if err := os.WriteFile(*deploymentFile, []byte(st.DeploymentID), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "agentload:", err)
				os.Exit(1)
			}
		}
		for _, k := range routes(srv, *key, *model, st, c) {
			k.name, k.target = t.prefix+k.name, t
			kinds = append(kinds, k)
		}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients * 2, MaxIdleConns: *clients * 4}}
	sessions := map[string][]*session{}
	for i, k := range kinds {
		for j := range *clients {
			sessions[k.name] = append(sessions[k.name], &session{rnd: rand.New(rand.NewPCG(uint64(i%3), uint64(j)))})
		}
	}
	for _, k := range kinds {
		before, searchedBefore := vendorCalls(*mockURL)
		r := closedLoop(ctx, client, k, sessions[k.name], *warmup)
		note := ""
		if strings.HasSuffix(k.name, "agent") && before >= 0 && r.ok > 0 {
			// Every turn sent is answered before closedLoop returns (those after the end are
			// late), so the mock has counted all their calls; a failed turn may have made fewer.
			calls, searched := vendorCalls(*mockURL)
			turns := float64(r.ok + r.failed + r.late)
			note = fmt.Sprintf("; vendor calls per turn %.2f, answered from a search %.2f (1.00: every turn searched)",
				float64(calls-before)/turns, float64(searched-searchedBefore)/turns)
		}
		fmt.Fprintf(os.Stderr, "agentload: warm-up %s: %d ok, %d failed, %d answered after its end%s\n", k.name, r.ok, r.failed, r.late, note)
		if r.ok+r.late == 0 { // a slow machine may answer nothing within a short warm-up: late answers count
			fmt.Fprintf(os.Stderr, "agentload: %s never succeeded: %s\n", k.name, r.firstErr)
			os.Exit(1)
		}
	}

	results := map[string][]round{}
	fmt.Printf("%-6s %-11s %9s %9s %9s %7s  %s\n", "round", "route", "req/s", "p50", "p99", "errors", "CPU µs/request")
	failed := 0
	for i := range *rounds {
		for j := range kinds {
			k := kinds[(i+j)%len(kinds)]
			var profiled <-chan struct{}
			finish := func(int) {}
			if i == 0 && *outDir != "" {
				if k.target.pprof != "" {
					profiled = profileCPU(k.target.pprof, *roundDur, filepath.Join(*outDir, "cpu-"+k.name+".pprof"))
				}
				if k.target.db != "" {
					finish = statements(ctx, k.target.db, filepath.Join(*outDir, "statements-"+k.name+".txt"))
				}
			}
			before := k.target.watch.Snapshot()
			r := closedLoop(ctx, client, k, sessions[k.name], *roundDur)
			r.cpu = benchkit.PerRequest(before, k.target.watch.Snapshot(), r.ok+r.late)
			finish(r.ok + r.late)
			if profiled != nil {
				<-profiled
			}
			results[k.name] = append(results[k.name], r)
			failed += r.failed
			fmt.Printf("%-6d %-11s %9.1f %9s %9s %7d  %s\n", i+1, k.name, r.rate(), ms(r.pct(0.5)), ms(r.pct(0.99)), r.failed, benchkit.CPUCell(r.cpu))
			if r.failed > 0 {
				fmt.Fprintf(os.Stderr, "agentload: %s round %d: first error: %s\n", k.name, i+1, r.firstErr)
			}
		}
	}
	summary(kinds, targets, results)
	if failed > 0 {
		os.Exit(1)
	}
}

// target is a server under load: the one measured, and optionally a baseline build beside it.
type target struct {
	prefix, url string // prefix of its routes' names: "" or "base-"
	pprof, db   string
	watch       benchkit.CPUWatch
}

// routes are the three measured routes.
func routes(srv, key, model string, st benchkit.Agent, c *benchkit.Corpus) []kind {
	auth := func() http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer " + key}}
	}
	stored := kind{name: "stored",
		next: func(s *session) (string, http.Header, []byte) {
			return srv + "/v1/responses", auth(), jsonBody(map[string]any{"model": model, "input": c.Query(s.rnd)})
		},
		done: func(_ *session, b []byte) error {
			if !strings.Contains(string(b), `"status":"completed"`) {
				return fmt.Errorf("stored: not completed: %.200s", b)
			}
			return nil
		}}
	agent := kind{name: "agent",
		next: func(s *session) (string, http.Header, []byte) {
			body := map[string]any{"message": c.Query(s.rnd)}
			if s.conv != "" {
				body["conversation_id"] = s.conv
			}
			return srv + "/api/agents/" + st.AgentID + "/chat", auth(), jsonBody(body)
		},
		done: func(s *session, b []byte) error {
			var a struct {
				ConversationID string `json:"conversation_id"`
				Reply          string `json:"reply"`
			}
			if err := json.Unmarshal(b, &a); err != nil || a.ConversationID == "" || a.Reply == "" {
				return fmt.Errorf("agent: not an answer: %.200s", b)
			}
			s.advance(a.ConversationID)
			return nil
		}}
	embed := kind{name: "embed",
		next: func(s *session) (string, http.Header, []byte) {
			body := map[string]any{"message": c.Query(s.rnd)}
			if s.conv != "" {
				body["visitor_token"] = s.conv
			}
			h := http.Header{"Content-Type": {"application/json"}, "Origin": {"https://shop.bench.example"}}
			return srv + "/embed/" + st.DeploymentID + "/chat", h, jsonBody(body)
		},
		done: func(s *session, b []byte) error {
			var a struct {
				VisitorToken string `json:"visitor_token"`
				Reply        string `json:"reply"`
			}
			if err := json.Unmarshal(b, &a); err != nil || a.VisitorToken == "" || a.Reply == "" {
				return fmt.Errorf("embed: not an answer: %.200s", b)
			}
			s.advance(a.VisitorToken)
			return nil
		}}
	return []kind{stored, agent, embed}
}

// summary prints each route's median and spread, and the per-round ratios.
func summary(kinds []kind, targets []*target, results map[string][]round) {
	fmt.Println()
	fmt.Printf("%-11s %22s %20s %20s  %s\n", "route", "req/s median (min-max)", "p50 median", "p99 median (min-max)", "CPU µs/request median")
	for _, k := range kinds {
		cpu := map[string][]float64{}
		for _, r := range results[k.name] {
			for name, v := range r.cpu {
				cpu[name] = append(cpu[name], v)
			}
		}
		cpuMedian := map[string]float64{}
		for name, v := range cpu {
			cpuMedian[name] = benchkit.Median(v)
		}
		rs := results[k.name]
		rate := make([]float64, len(rs))
		p50 := make([]float64, len(rs))
		p99 := make([]float64, len(rs))
		for i, r := range rs {
			rate[i], p50[i], p99[i] = r.rate(), float64(r.pct(0.5).Microseconds())/1000, float64(r.pct(0.99).Microseconds())/1000
		}
		fmt.Printf("%-11s %22s %20s %20s  %s\n", k.name, spread(rate, "%.0f"), fmt.Sprintf("%.1f ms", benchkit.Median(p50)), spread(p99, "%.1f")+" ms", benchkit.CPUCell(cpuMedian))
	}
	ratio := func(a, b string) []float64 {
		var out []float64
		for i := range results[a] {
			if i < len(results[b]) && results[b][i].rate() > 0 {
				out = append(out, results[a][i].rate()/results[b][i].rate())
			}
		}
		return out
	}
	for _, t := range targets {
		p := t.prefix
		fmt.Println()
		fmt.Printf("%sagent / %sstored req/s: %s (target >= 0.8)\n", p, p, spread(ratio(p+"agent", p+"stored"), "%.2f"))
		fmt.Printf("%sembed / %sagent req/s:  %s (target >= 0.8)\n", p, p, spread(ratio(p+"embed", p+"agent"), "%.2f"))
	}
	if len(targets) > 1 {
		fmt.Println()
		for _, r := range []string{"stored", "agent", "embed"} {
			fmt.Printf("%s / base-%s req/s (this build against the baseline, per round): %s\n", r, r, spread(ratio(r, "base-"+r), "%.2f"))
		}
	}
}

// spread is "median (min-max)" in format f.
func spread(v []float64, f string) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf(f+" ("+f+"-"+f+")", benchkit.Median(v), slices.Min(v), slices.Max(v))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// vendorCalls is the mock's count of vendor calls and of those answered from a search
// (GET /stats), -1 without a mock.
func vendorCalls(mock string) (calls, fromSearch int64) {
	if mock == "" {
		return -1, -1
	}
	resp, err := http.Get(strings.TrimSuffix(mock, "/") + "/stats")
	if err != nil {
		return -1, -1
	}
	defer resp.Body.Close()
	var s map[string]int64
	if json.NewDecoder(resp.Body).Decode(&s) != nil {
		return -1, -1
	}
	return s["anthropic"] + s["openai"] + s["gemini"], s["from_search"]
}
