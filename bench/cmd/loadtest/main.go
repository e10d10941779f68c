// Command loadtest drives the Switchboard benchmark scenarios against a running server, a
// running mockllm and the server's database, and prints one table. bench/run.sh starts all of
// them; see docs/benchmarks.md.
//
//	loadtest models-file                 print the MODELS_FILE the server must be started with
//	loadtest run -server URL -mock URL -capture DIR -database-url URL -switchboard BIN [-plan short|full]
//	loadtest compare BASELINE.json HEAD.json   two runs side by side, with ratios
//
// Load comes from vegeta (github.com/tsenart/vegeta/v12) in two modes:
//
//	closed  a fixed number of clients, each sending its next request when the previous one
//	        has been answered (the concurrency sweeps: 1, 16, 64, 256 clients);
//	open    a constant arrival rate, whatever the answers do (the throughput targets); a run
//	        that cannot keep up shows an achieved rate below the one offered.
//
// Latencies are exact percentiles over every request of a run (nearest rank), not estimates.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	vegeta "github.com/tsenart/vegeta/v12/lib"

	"switchboard/bench/benchkit"
)

// Models of the catalog the benchmarks use, and the upstream names MODELS_FILE gives them. The
// mock reads the pacing from the upstream name (see bench/mockllm).
var (
	protocolModels = []struct{ protocol, model string }{
		{"anthropic", "alpha-sonnet-4-6"}, {"openai", "beta-5.4"}, {"gemini", "gamma-v4-flash"},
	}
	streamModel = pacedModel{id: "alpha-opus-4-7", upstream: "paced-stream", ttft: 50 * time.Millisecond, interval: 10 * time.Millisecond, chunks: 10}
	heldModel   = pacedModel{id: "alpha-haiku-4-5", upstream: "paced-held", ttft: 50 * time.Millisecond, interval: 200 * time.Millisecond, chunks: 16}
)

type pacedModel struct {
	id, upstream   string
	ttft, interval time.Duration
	chunks         int
}

func (p pacedModel) upstreamName() string {
	return fmt.Sprintf("%s@ttft=%s,interval=%s,chunks=%d", p.upstream, p.ttft, p.interval, p.chunks)
}

// chunkMarker is in every content delta of the mock's answers (mockllm -chunk-text default).
var chunkMarker = []byte("lorem ipsum")

type plan struct {
	name          string
	sweep, warm   time.Duration
	clients       []int
	protocols     []string // protocols swept for scenarios 1 and 2
	chatRates     []int    // open-loop rates of scenario 2
	respRates     []int    // open-loop rates of scenario 3
	openDur       time.Duration
	streamClients []int
	streamDur     time.Duration
	held          []int // streams held open at once, one run each
	heldRamp      time.Duration
	fanSubs       int
	fanRates      []int // turns per second, two events each
	fanDur        time.Duration
	hookTurns     int
	hookClients   int
	hookTimeout   time.Duration
	// spread runs scenarios 2 and 3 again over this many workspaces, at spreadClients, to show
	// what one workspace's row lock costs (every turn updates its workspace row).
	spread        int
	spreadClients []int
}

var plans = map[string]plan{
	"short": {name: "short", sweep: 2 * time.Second, warm: 500 * time.Millisecond, clients: []int{1, 16, 64, 256},
		protocols: []string{"anthropic"}, chatRates: []int{8000}, respRates: []int{2000}, openDur: 3 * time.Second,
		streamClients: []int{64}, streamDur: 3 * time.Second, held: []int{1000}, heldRamp: time.Second,
		fanSubs: 1000, fanRates: []int{20}, fanDur: 3 * time.Second, hookTurns: 1000, hookClients: 16, hookTimeout: 30 * time.Second,
		spread: 16, spreadClients: []int{64}},
	"full": {name: "full", sweep: 10 * time.Second, warm: 2 * time.Second, clients: []int{1, 16, 64, 256},
		protocols: []string{"anthropic", "openai", "gemini"}, chatRates: []int{100, 200, 400, 8000}, respRates: []int{100, 200, 2000},
		openDur: 10 * time.Second, streamClients: []int{1, 16, 64, 256}, streamDur: 10 * time.Second, held: []int{1000, 2000, 4000}, heldRamp: time.Second,
		fanSubs: 1000, fanRates: []int{20, 50}, fanDur: 10 * time.Second, hookTurns: 5000, hookClients: 16, hookTimeout: 120 * time.Second,
		spread: 16, spreadClients: []int{16, 64, 256}},
}

// The peers plan (scenario 7, bench/run.sh peers) measures as issue 17's table did: 5 s per
// row, after a 1 s warm-up.
func init() {
	p := plans["short"]
	p.name, p.sweep, p.warm = "peers", 5*time.Second, time.Second
	plans["peers"] = p
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadtest models-file | loadtest run [flags] | loadtest compare BASELINE.json HEAD.json | loadtest chart -o FILE.svg RESULTS.json... | loadtest proxy -upstream URL | loadtest delay -target HOST:PORT -delay D")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "models-file":
		for _, p := range []pacedModel{streamModel, heldModel} {
			fmt.Printf("%s:\n  upstream: %q\n", p.id, p.upstreamName())
		}
		return
	case "compare":
		compareCommand(os.Args[2:])
		return
	case "chart":
		chartCommand(os.Args[2:])
		return
	case "proxy":
		proxyCommand(os.Args[2:])
		return
	case "delay":
		delayCommand(os.Args[2:])
		return
	case "run":
	default:
		fmt.Fprintf(os.Stderr, "loadtest: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	var o options
	fs.StringVar(&o.plan, "plan", "short", "short, full or peers (scenario 7's 5 s rows)")
	fs.StringVar(&o.server, "server", "", "Switchboard base URL (http://127.0.0.1:PORT)")
	fs.StringVar(&o.mock, "mock", "", "mockllm base URL")
	fs.StringVar(&o.capture, "capture", "", "the mock's -capture directory")
	fs.StringVar(&o.databaseURL, "database-url", "", "the server's database (workspaces and keys for the run are created in it)")
	fs.StringVar(&o.switchboard, "switchboard", "", "the switchboard binary of the server under test: its CLI creates the run's workspaces and keys, so any commit's schema works")
	fs.StringVar(&o.jsonOut, "json", "", "also write the rows as JSON to this file")
	fs.StringVar(&o.mdOut, "markdown", "", "also write the table as Markdown to this file")
	fs.StringVar(&o.only, "only", "", "comma-separated scenarios to run (1-7); empty: 1-6")
	fs.StringVar(&o.server2, "server2", "", "scenario 8: a second server of the same build, metrics off, to alternate with -server")
	fs.StringVar(&o.databaseURL2, "database-url2", "", "scenario 8: the database of -server2")
	fs.StringVar(&o.peer, "peer", "", "base URL of a peer gateway (Portkey) in front of the mock, for scenario 7")
	fs.StringVar(&o.bare, "bare", "", "scenario 7: base URL of `loadtest proxy` in front of the mock (the bare Go proxy rows)")
	fs.StringVar(&o.cpu, "cpu", "", "scenario 7: NAME=PID,... of the processes whose CPU per request each row reports (with their children; this process is loadgen)")
	fs.StringVar(&o.gen, "gen", "vegeta", "scenario 7: the closed-loop load generator, vegeta or wrk (a C event loop; see wrk.go)")
	fs.StringVar(&o.wrk, "wrk", "wrk", "scenario 7 with -gen wrk: the wrk binary")
	_ = fs.Parse(os.Args[2:])
	p, ok := plans[o.plan]
	if !ok || o.server == "" || o.mock == "" || o.capture == "" || o.databaseURL == "" || o.switchboard == "" {
		fmt.Fprintln(os.Stderr, "loadtest run: -plan short|full, -server, -mock, -capture, -database-url and -switchboard are required")
		os.Exit(2)
	}
	if o.gen != "vegeta" && o.gen != "wrk" {
		fmt.Fprintf(os.Stderr, "loadtest run: -gen %q: vegeta or wrk\n", o.gen)
		os.Exit(2)
	}
	watch, err := parseCPUWatch(o.cpu)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest run:", err)
		os.Exit(2)
	}
	rows, err := run(context.Background(), o, p, watch)
	printTable(os.Stdout, rows)
	if o.jsonOut != "" {
		raw, _ := json.MarshalIndent(rows, "", "  ")
		_ = os.WriteFile(o.jsonOut, raw, 0o644)
	}
	if o.mdOut != "" {
		f, ferr := os.Create(o.mdOut)
		if ferr == nil {
			printMarkdown(f, rows)
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

type options struct {
	plan, server, mock, capture, databaseURL, switchboard, jsonOut, mdOut, only, peer string
	server2, databaseURL2, bare, cpu                                                  string
	// gen is scenario 7's closed-loop generator: vegeta, or the wrk binary at wrk (wrk.go).
	gen, wrk string
}

func (o options) wants(scenario int) bool {
	if o.only == "" {
		return scenario <= 6 // 7 (the peer gateway) and 8 (metrics overhead) run when asked
	}
	return slices.Contains(strings.Split(o.only, ","), fmt.Sprint(scenario))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// bench is the state of one run.
type bench struct {
	o     options
	p     plan
	db    *pgxpool.Pool
	rows  []row
	stamp string
	watch benchkit.CPUWatch // the processes whose CPU per request scenario 7's rows report
}

// workspace creates a workspace with ample credit and an owner key, for one scenario. It runs
// the CLI of the server under test (`switchboard workspaces create`, `switchboard keys
// create`), never this tree's store code, so an A/B run (BENCH_BASELINE) can compare commits
// whose schemas differ.
func (b *bench) workspace(ctx context.Context, name string) (key string, id string, err error) {
	return b.workspaceIn(ctx, b.o.databaseURL, name)
}

// workspaceIn is workspace on the database of another server (scenario 8).
func (b *bench) workspaceIn(ctx context.Context, databaseURL, name string) (key string, id string, err error) {
	name = "bench-" + name + "-" + b.stamp
	out, err := b.cli(ctx, databaseURL, "workspaces", "create", name)
	if err != nil {
		return "", "", err
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "id="); ok {
			id = v
		}
	}
	if id == "" {
		return "", "", fmt.Errorf("switchboard workspaces create %s: no id= in %q", name, out)
	}
	out, err = b.cli(ctx, databaseURL, "keys", "create", "--workspace", name, "--role", "owner")
	if err != nil {
		return "", "", err
	}
	key = strings.TrimSpace(out)
	if !strings.HasPrefix(key, "sk-") {
		return "", "", fmt.Errorf("switchboard keys create: unexpected output %q", out)
	}
	return key, id, nil
}

// cli runs the server's binary with the server's database and $1,000,000 of starting credit,
// and returns its standard output.
func (b *bench) cli(ctx context.Context, databaseURL string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, b.o.switchboard, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL, "WORKSPACE_STARTING_CREDIT_USD=1000000")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", filepath.Base(b.o.switchboard), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (b *bench) add(r row) row {
	b.rows = append(b.rows, r)
	logf("%-34s %-8s %9.0f/s  p50 %7.2f  p99 %7.2f  p99.9 %7.2f ms  errors %d %s", r.Scenario, r.Load, r.RPS, r.P50, r.P99, r.P999, r.Errors, r.Note)
	return r
}

func chatBody(model string, stream bool) map[string]any {
	b := map[string]any{"model": model, "messages": []map[string]any{{"role": "user", "content": "Say hello."}}}
	if stream {
		b["stream"] = true
	}
	return b
}

// settle lets the machine drain between runs (relay sweeps, queued commits, TIME_WAIT).
func settle() { time.Sleep(300 * time.Millisecond) }

func run(ctx context.Context, o options, p plan, watch benchkit.CPUWatch) ([]row, error) {
	db, err := pgxpool.New(ctx, o.databaseURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	b := &bench{o: o, p: p, db: db, stamp: time.Now().Format("150405.000"), watch: watch}
	key, _, err := b.workspace(ctx, "turns")
	if err != nil {
		return nil, fmt.Errorf("create the bench workspace: %w", err)
	}
	chatURL, respURL := o.server+"/v1/chat/completions", o.server+"/v1/responses"

	// One turn per model through the server: the mock records the vendor requests it sent,
	// which the direct baseline replays.
	for _, m := range protocolModels {
		if _, err := once(http.DefaultClient, jsonTarget(chatURL, key, chatBody(m.model, false))); err != nil {
			return nil, fmt.Errorf("warm-up turn on %s: %w", m.model, err)
		}
	}
	for _, m := range []pacedModel{streamModel} {
		if _, err := once(http.DefaultClient, jsonTarget(chatURL, key, chatBody(m.id, true))); err != nil {
			return nil, fmt.Errorf("warm-up turn on %s: %w (was the server started with `loadtest models-file` as MODELS_FILE?)", m.id, err)
		}
	}
	direct, err := loadCaptures(o.capture, o.mock)
	if err != nil {
		return nil, err
	}
	directOf := func(model string) (target, error) {
		t, ok := direct[model]
		if !ok {
			return t, fmt.Errorf("no captured vendor request for model %q in %s", model, o.capture)
		}
		return t, nil
	}

	// Scenarios 1 and 2: the sweep, mock direct vs ephemeral chat completions, per protocol.
	baseline := map[string]row{} // "protocol c=N" or "protocol N/s" -> scenario 1 row
	for _, protocol := range p.protocols {
		model := modelOf(protocol)
		dt, err := directOf(model)
		if err != nil {
			return b.rows, err
		}
		dt.expect = map[string][]byte{"anthropic": []byte("message_stop"), "openai": []byte("[DONE]"), "gemini": []byte(`"finishReason":"STOP"`)}[protocol]
		chat := jsonTarget(chatURL, key, chatBody(model, false))
		chat.expect = []byte(`"finish_reason":"stop"`)
		for _, c := range p.clients {
			if o.wants(1) || o.wants(2) {
				closedLoop(dt, c, p.warm)
				r := b.add(rowOf("1 direct mock ("+protocol+")", fmt.Sprintf("c=%d", c), "closed", closedLoop(dt, c, p.sweep)))
				baseline[fmt.Sprintf("%s c=%d", protocol, c)] = r
				settle()
			}
			if o.wants(2) {
				closedLoop(chat, c, p.warm)
				r := rowOf("2 chat ephemeral ("+protocol+")", fmt.Sprintf("c=%d", c), "closed", closedLoop(chat, c, p.sweep))
				r.added(baseline[fmt.Sprintf("%s c=%d", protocol, c)])
				if protocol == "anthropic" && c == 1 && r.AddedP50 != nil {
					r.verdict("added p50 < 0.3 ms", *r.AddedP50 < 0.3)
				}
				if protocol == "anthropic" && c == 64 && r.AddedP99 != nil {
					r.verdict("added p99 < 5 ms", *r.AddedP99 < 5)
				}
				b.add(r)
				settle()
			}
		}
	}
	anthropicDirect, err := directOf(modelOf("anthropic"))
	if err != nil {
		return b.rows, err
	}
	anthropicDirect.expect = []byte("message_stop")
	openRates := slices.Sorted(slices.Values(append(append([]int(nil), p.chatRates...), p.respRates...)))
	openRates = slices.Compact(openRates)
	if o.wants(1) || o.wants(2) || o.wants(3) {
		for _, rate := range openRates {
			r := b.add(rowOf("1 direct mock (anthropic)", fmt.Sprintf("%d/s", rate), "open", openLoop(anthropicDirect, rate, p.openDur)))
			r.Offered = rate
			b.rows[len(b.rows)-1] = r
			baseline[fmt.Sprintf("anthropic %d/s", rate)] = r
			settle()
		}
	}
	if o.wants(2) {
		chat := jsonTarget(chatURL, key, chatBody(modelOf("anthropic"), false))
		chat.expect = []byte(`"finish_reason":"stop"`)
		for _, rate := range p.chatRates {
			r := rowOf("2 chat ephemeral (anthropic)", fmt.Sprintf("%d/s", rate), "open", openLoop(chat, rate, p.openDur))
			r.Offered = rate
			r.added(baseline[fmt.Sprintf("anthropic %d/s", rate)])
			b.add(r)
			settle()
		}
		b.best("2 chat ephemeral (anthropic)", "> 8,000 req/s", 8000)
		if err := b.spreadRuns(ctx, "2 chat ephemeral (anthropic)", func(k string) target {
			t := jsonTarget(chatURL, k, chatBody(modelOf("anthropic"), false))
			t.expect = []byte(`"finish_reason":"stop"`)
			return t
		}, baseline); err != nil {
			return b.rows, err
		}
	}

	// Scenario 3: stored responses.
	if o.wants(3) {
		resp := jsonTarget(respURL, key, map[string]any{"model": modelOf("anthropic"), "input": "Say hello."})
		resp.expect = []byte(`"status":"completed"`)
		for _, c := range p.clients {
			closedLoop(resp, c, p.warm)
			r := rowOf("3 responses stored (anthropic)", fmt.Sprintf("c=%d", c), "closed", closedLoop(resp, c, p.sweep))
			r.added(baseline[fmt.Sprintf("anthropic c=%d", c)])
			b.add(r)
			settle()
		}
		for _, rate := range p.respRates {
			r := rowOf("3 responses stored (anthropic)", fmt.Sprintf("%d/s", rate), "open", openLoop(resp, rate, p.openDur))
			r.Offered = rate
			r.added(baseline[fmt.Sprintf("anthropic %d/s", rate)])
			b.add(r)
			settle()
		}
		b.best("3 responses stored (anthropic)", "> 2,000 turns/s", 2000)
		if err := b.spreadRuns(ctx, "3 responses stored (anthropic)", func(k string) target {
			t := jsonTarget(respURL, k, map[string]any{"model": modelOf("anthropic"), "input": "Say hello."})
			t.expect = []byte(`"status":"completed"`)
			return t
		}, baseline); err != nil {
			return b.rows, err
		}
	}

	// Scenario 4: streaming over the paced mock.
	if o.wants(4) {
		if err := b.streaming(key, chatURL, directOf); err != nil {
			return b.rows, err
		}
	}
	// Scenario 5: event fan-out.
	for _, rate := range p.fanRates {
		if !o.wants(5) {
			break
		}
		fkey, fid, err := b.workspace(ctx, fmt.Sprintf("fanout%d", rate))
		if err != nil {
			return b.rows, err
		}
		turn := jsonTarget(chatURL, fkey, chatBody(modelOf("anthropic"), false))
		logf("5: connecting %d subscribers", p.fanSubs)
		res, err := fanout(o.server, fkey, p.fanSubs, rate, p.fanDur, turn, b.eventCount(ctx, fid))
		if err != nil {
			return b.rows, fmt.Errorf("fan-out: %w", err)
		}
		r := rowOf("5 event fan-out", fmt.Sprintf("%d subs", p.fanSubs), fmt.Sprintf("%d turns/s", rate), res.latency)
		r.RPSUnit, r.Metric = "deliveries/s", "event created_at -> subscriber"
		r.Note = strings.TrimSpace(fmt.Sprintf("%d events x %d subscribers, %d delivered, connect %s; turns: %d ok, %d errors %s",
			res.events, p.fanSubs, res.delivered, res.connectIn.Round(time.Millisecond), res.turns.ok, res.turns.errs, res.turns.errSummary()))
		r.verdict("p99 < 100 ms, none missing", r.P99 < 100 && res.missing == 0 && res.events > 0)
		b.add(r)
		settle()
	}
	// Scenario 6: webhook deliveries.
	if o.wants(6) {
		wkey, wid, err := b.workspace(ctx, "webhooks")
		if err != nil {
			return b.rows, err
		}
		turn := jsonTarget(chatURL, wkey, chatBody(modelOf("anthropic"), false))
		logf("6: %d turns with a webhook receiver", p.hookTurns)
		res, err := webhooks(o.server, wkey, p.hookTurns, p.hookClients, p.hookTimeout, turn, b.eventCount(ctx, wid))
		if err != nil {
			return b.rows, fmt.Errorf("webhooks: %w", err)
		}
		r := rowOf("6 webhook deliveries", fmt.Sprintf("%d events", res.events), "signed", res.lag)
		r.RPS, r.RPSUnit, r.Metric = res.rate, "deliveries/s", "event created_at -> receiver"
		r.Note = strings.TrimSpace(fmt.Sprintf("%d/%d delivered in %s (turns took %s, %.0f turns/s), %d bad signatures, %d duplicates %s",
			res.delivered, res.events, res.window.Round(time.Millisecond), res.generation.Round(time.Millisecond), res.turns.rate(), res.badSig, res.dupes, r.Note))
		r.verdict("> 1,000 signed deliveries/s", res.rate > 1000 && int64(res.delivered) == res.events && res.badSig == 0)
		b.add(r)
	}
	if o.wants(8) {
		if o.server2 == "" || o.databaseURL2 == "" {
			return b.rows, fmt.Errorf("scenario 8 needs -server2 and -database-url2 (bench/run.sh overhead starts both)")
		}
		if err := b.overhead(ctx, key, chatURL); err != nil {
			return b.rows, err
		}
	}
	if o.wants(7) {
		if o.peer == "" {
			return b.rows, fmt.Errorf("scenario 7 needs -peer (bench/run.sh peers starts the Portkey gateway)")
		}
		if err := b.peers(ctx, key, chatURL, respURL); err != nil {
			return b.rows, err
		}
	}
	return b.rows, nil
}

// overhead is scenario 8: two servers of the same build running at once, -server with
// metrics on (METRICS_ADDR) and tracing off, -server2 with both off, each on its own database;
// the same ephemeral chat completion at 64 clients, alternately against one and the other,
// overheadRounds times (the order flips every round), so both see the same machine. The
// summary row gives the median of the per-round ratios (on / off).
func (b *bench) overhead(ctx context.Context, key, chatURL string) error {
	key2, _, err := b.workspaceIn(ctx, b.o.databaseURL2, "overhead")
	if err != nil {
		return err
	}
	model := modelOf("anthropic")
	on := jsonTarget(chatURL, key, chatBody(model, false))
	off := jsonTarget(strings.TrimSuffix(b.o.server2, "/")+"/v1/chat/completions", key2, chatBody(model, false))
	on.expect, off.expect = []byte(`"finish_reason":"stop"`), []byte(`"finish_reason":"stop"`)
	const c = 64
	closedLoop(on, c, b.p.warm)
	closedLoop(off, c, b.p.warm)
	var ratios []float64
	var onAll, offAll []row
	for round := range overheadRounds {
		measure := func(t target, name string) row {
			r := b.add(rowOf(name, fmt.Sprintf("c=%d r%d", c, round+1), "closed", closedLoop(t, c, b.p.sweep)))
			settle()
			return r
		}
		var rOn, rOff row
		if round%2 == 0 {
			rOn = measure(on, "8 metrics on, tracing off")
			rOff = measure(off, "8 metrics off, tracing off")
		} else {
			rOff = measure(off, "8 metrics off, tracing off")
			rOn = measure(on, "8 metrics on, tracing off")
		}
		onAll, offAll = append(onAll, rOn), append(offAll, rOff)
		if rOff.RPS > 0 {
			ratios = append(ratios, rOn.RPS/rOff.RPS)
		}
	}
	slices.Sort(ratios)
	median := 0.0
	if len(ratios) > 0 {
		median = ratios[len(ratios)/2]
	}
	sum := func(rs []row) (rps float64, p99 []float64) {
		for _, r := range rs {
			rps += r.RPS / float64(len(rs))
			p99 = append(p99, r.P99)
		}
		slices.Sort(p99)
		return rps, p99
	}
	onRPS, onP99 := sum(onAll)
	offRPS, offP99 := sum(offAll)
	r := row{Scenario: "8 metrics overhead (on / off)", Load: fmt.Sprintf("c=%d", c), Mode: "closed", RPS: median, RPSUnit: "x (median ratio)",
		Metric: "req/s on / off",
		Note: fmt.Sprintf("per-round ratios %s; mean req/s on %.0f, off %.0f; median p99 on %.1f ms, off %.1f ms",
			fmtRatios(ratios), onRPS, offRPS, onP99[len(onP99)/2], offP99[len(offP99)/2])}
	r.verdict("metrics add <= 3% (median ratio >= 0.97)", median >= 0.97)
	b.add(r)
	return nil
}

const overheadRounds = 7

func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.3f", r)
	}
	return strings.Join(parts, " ")
}

// peers is scenario 7: the same OpenAI-protocol chat completion (beta-5.4, "Say hello.",
// not streamed) sent to the mock directly (the load generator's own ceiling, as in issue 17's
// table), through Switchboard, through the peer gateway (Portkey, -peer) pointed at the same
// mock, and through a bare Go proxy (-bare, `loadtest proxy`: the ceiling of a Go gateway on
// the machine), at 1 and 64 clients, side by side in one run; then Switchboard's stored
// response on the same model and input (POST /v1/responses, stored: conversation, messages,
// response, ledger and events committed before the 200), against the same Portkey rows. Each
// row also reports the CPU per request of the processes of -cpu, and every row of the run
// comes from the same generator (-gen).
func (b *bench) peers(ctx context.Context, key, chatURL, respURL string) error {
	model := modelOf("openai")
	body := chatBody(model, false)
	marker := []byte(`"finish_reason":"stop"`)
	sb := jsonTarget(chatURL, key, body)
	sb.expect = marker
	direct := jsonTarget(strings.TrimSuffix(b.o.mock, "/")+"/v1/chat/completions", "mock", body)
	direct.expect = marker
	pk := jsonTarget(strings.TrimSuffix(b.o.peer, "/")+"/v1/chat/completions", "mock", body)
	pk.header.Set("x-portkey-provider", "openai")
	pk.header.Set("x-portkey-custom-host", strings.TrimSuffix(b.o.mock, "/")+"/v1")
	pk.expect = marker
	if _, err := once(http.DefaultClient, pk); err != nil {
		return fmt.Errorf("a chat completion through the peer gateway: %w", err)
	}
	var bare *target
	if b.o.bare != "" {
		t := jsonTarget(strings.TrimSuffix(b.o.bare, "/")+"/v1/chat/completions", "mock", body)
		t.expect = marker
		if _, err := once(http.DefaultClient, t); err != nil {
			return fmt.Errorf("a chat completion through the bare Go proxy: %w", err)
		}
		bare = &t
	}
	peers, bares := map[int]row{}, map[int]row{}
	for _, c := range []int{1, 64} {
		load := fmt.Sprintf("c=%d", c)
		d, err := b.warmMeasured("7 mock vendor direct (openai)", load, direct, c)
		if err != nil {
			return err
		}
		b.add(d)
		peer, err := b.warmMeasured("7 Portkey gateway 1.15.2 (openai)", load, pk, c)
		if err != nil {
			return err
		}
		peers[c] = b.add(peer)
		if bare != nil {
			r, err := b.warmMeasured("7 bare Go proxy (forwards only)", load, *bare, c)
			if err != nil {
				return err
			}
			r.Note = strings.TrimSpace(fmt.Sprintf("%.2fx Portkey's req/s %s", ratioOf(r, peer), r.Note))
			bares[c] = b.add(r)
		}
		r, err := b.warmMeasured("7 Switchboard chat ephemeral (openai)", load, sb, c)
		if err != nil {
			return err
		}
		r.added(peer)
		ratio := ratioOf(r, peer)
		r.Note = strings.TrimSpace(fmt.Sprintf("%.2fx Portkey's req/s%s %s", ratio, bareNote(r, bares[c]), r.Note))
		want := 2.0
		if c == 64 {
			want = 5
		}
		r.verdict(fmt.Sprintf(">= %.0fx Portkey's req/s", want), ratio >= want)
		b.add(r)
	}
	stored := jsonTarget(respURL, key, map[string]any{"model": model, "input": "Say hello."})
	stored.expect = []byte(`"status":"completed"`)
	for _, c := range []int{1, 64} {
		r, err := b.warmMeasured("7 Switchboard response stored (openai)", fmt.Sprintf("c=%d", c), stored, c)
		if err != nil {
			return err
		}
		peer := peers[c]
		r.added(peer)
		ratio := ratioOf(r, peer)
		r.Note = strings.TrimSpace(fmt.Sprintf("%.2fx Portkey's req/s %s", ratio, r.Note))
		if c == 64 {
			r.verdict("> 2,000 turns/s and >= 1.5x Portkey's req/s", r.RPS > 2000 && ratio >= 1.5)
		}
		b.add(r)
	}
	return nil
}

// warmMeasured is a closed-loop row of c clients after a warm-up at the same load, with the
// CPU per request each watched process spent during it, then a pause for the machine to
// settle. The caller adds it to the table, once it has written its ratios.
func (b *bench) warmMeasured(scenario, load string, t target, c int) (row, error) {
	if _, err := b.closed(t, c, b.p.warm); err != nil {
		return row{}, err
	}
	before := b.watch.Snapshot()
	s, err := b.closed(t, c, b.p.sweep)
	if err != nil {
		return row{}, err
	}
	after := b.watch.Snapshot()
	r := rowOf(scenario, load, "closed, "+b.o.gen, s)
	r.CPU = benchkit.PerRequest(before, after, s.ok+s.errs)
	settle()
	return r, nil
}

// closed is a closed loop of c clients for d from scenario 7's generator (-gen).
func (b *bench) closed(t target, c int, d time.Duration) (*sample, error) {
	if b.o.gen == "wrk" {
		return wrkLoop(b.o.wrk, t, c, d)
	}
	return closedLoop(t, c, d), nil
}

// ratioOf is r's req/s over base's (0 when base did not run).
func ratioOf(r, base row) float64 {
	if base.RPS <= 0 {
		return 0
	}
	return r.RPS / base.RPS
}

// bareNote says how near a Switchboard row came to the bare Go proxy's row of the same load.
func bareNote(r, bare row) string {
	if bare.RPS <= 0 {
		return ""
	}
	return fmt.Sprintf(", %.2fx the bare Go proxy's", r.RPS/bare.RPS)
}

// eventCount reads a workspace's event cursor: the number of events it ever committed.
func (b *bench) eventCount(ctx context.Context, workspaceID string) func() (int64, error) {
	return func() (int64, error) {
		var n int64
		err := b.db.QueryRow(ctx, `SELECT event_seq FROM workspaces WHERE id = $1`, workspaceID).Scan(&n)
		return n, err
	}
}

// spreadRuns repeats a scenario with its requests spread round-robin over p.spread
// workspaces (one key each), closed loop at each of p.spreadClients.
func (b *bench) spreadRuns(ctx context.Context, scenario string, mk func(key string) target, baseline map[string]row) error {
	if b.p.spread < 2 {
		return nil
	}
	var targets []vegeta.Target
	for i := range b.p.spread {
		k, _, err := b.workspace(ctx, fmt.Sprintf("spread%s-%d", scenario[:1], i))
		if err != nil {
			return err
		}
		targets = append(targets, mk(k).vegeta())
	}
	expect := mk("").expect
	name := fmt.Sprintf("%s, %d workspaces)", strings.TrimSuffix(scenario, ")"), b.p.spread)
	for _, c := range b.p.spreadClients {
		_ = attackTargets(targets, expect, 0, c, c, b.p.warm)
		r := rowOf(name, fmt.Sprintf("c=%d", c), "closed", attackTargets(targets, expect, 0, c, c, b.p.sweep))
		r.added(baseline[fmt.Sprintf("anthropic c=%d", c)])
		b.add(r)
		settle()
	}
	return nil
}

// best marks the row of a scenario with the highest error-free rate against a throughput
// target.
func (b *bench) best(scenario, target string, want float64) {
	bi := -1
	for i, r := range b.rows {
		if r.Scenario == scenario && r.Errors == 0 && (bi < 0 || r.RPS > b.rows[bi].RPS) {
			bi = i
		}
	}
	if bi < 0 {
		logf("%s: no error-free run", scenario)
		return
	}
	b.rows[bi].verdict(target+" (best run)", b.rows[bi].RPS > want)
}

func (b *bench) streaming(key, chatURL string, directOf func(string) (target, error)) error {
	p := b.p
	dt, err := directOf(streamModel.upstreamName())
	if err != nil {
		return err
	}
	via := jsonTarget(chatURL, key, chatBody(streamModel.id, true))
	for _, c := range p.streamClients {
		load := fmt.Sprintf("c=%d", c)
		dTTFT, dGaps, _ := streamLoop(dt, chunkMarker, streamModel.chunks, c, p.streamDur)
		settle()
		vTTFT, vGaps, vTails := streamLoop(via, chunkMarker, streamModel.chunks, c, p.streamDur)
		settle()
		desc := fmt.Sprintf("paced: first token %s, %d chunks every %s", streamModel.ttft, streamModel.chunks, streamModel.interval)
		rd := rowOf("4 stream TTFT direct", load, "closed", dTTFT)
		rd.RPSUnit, rd.Metric, rd.Note = "streams/s", "time to first token", strings.TrimSpace(desc+" "+rd.Note)
		b.add(rd)
		rv := rowOf("4 stream TTFT via Switchboard", load, "closed", vTTFT)
		rv.RPSUnit, rv.Metric = "streams/s", "time to first token"
		rv.added(rd)
		if rv.AddedP99 != nil {
			rv.verdict("added TTFT p99 < 2 ms", *rv.AddedP99 < 2)
		}
		b.add(rv)
		gd := rowOf("4 stream gaps direct", load, "closed", dGaps)
		gd.RPSUnit, gd.Metric = "chunks/s", "inter-chunk gap"
		b.add(gd)
		gv := rowOf("4 stream gaps via Switchboard", load, "closed", vGaps)
		gv.RPSUnit, gv.Metric = "chunks/s", "inter-chunk gap"
		gv.added(gd)
		gv.Note = fmt.Sprintf("last token -> end of stream: p50 %.2f, p99 %.2f, max %.2f ms", ms(vTails.pct(0.5)), ms(vTails.pct(0.99)), ms(vTails.max()))
		b.add(gv)
	}
	for _, n := range p.held {
		held := jsonTarget(chatURL, key, chatBody(heldModel.id, true))
		logf("4: holding %d streams (%d chunks every %s)", n, heldModel.chunks, heldModel.interval)
		hold := heldModel.ttft + time.Duration(heldModel.chunks)*heldModel.interval
		res := holdStreams(held, chunkMarker, heldModel.chunks, n, p.heldRamp, heldModel.interval, hold+p.heldRamp+90*time.Second)
		r := rowOf("4 concurrent streams held", fmt.Sprintf("%d", n), "ramp "+p.heldRamp.String(), res.gaps)
		r.RPSUnit, r.Metric = "chunks/s", "inter-chunk gap"
		r.Note = strings.TrimSpace(fmt.Sprintf("peak %d open, %d completed; stalls (>= %s): %d between tokens, %d streams ending late "+
			"(last token -> end p50 %.0f, p99 %.0f, max %.0f ms); TTFT p99 %.0f ms; vendor: %d chunks every %s %s",
			res.peak, res.completed, 2*heldModel.interval, res.gapStalls, res.tailStalls, ms(res.tails.pct(0.5)), ms(res.tails.pct(0.99)), ms(res.tails.max()),
			ms(res.ttft.pct(0.99)), heldModel.chunks, heldModel.interval, res.ttft.errSummary()))
		r.Errors = res.ttft.errs
		ok := res.peak >= int64(n) && res.completed == n && res.gapStalls == 0 && res.tailStalls == 0
		switch {
		case n == 1000:
			r.verdict("1,000 streams, no stall", ok)
		case ok:
			r.Note = "no stall; " + r.Note
		default:
			r.Note = "STALLED or incomplete; " + r.Note
		}
		b.add(r)
		settle()
	}
	return nil
}

func modelOf(protocol string) string {
	for _, m := range protocolModels {
		if m.protocol == protocol {
			return m.model
		}
	}
	panic("unknown protocol " + protocol)
}

// loadCaptures reads every request the mock recorded, by upstream model name.
func loadCaptures(dir, mockURL string) (map[string]target, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		return nil, errors.Join(err, fmt.Errorf("no captured vendor requests in %s (start mockllm with -capture %s)", dir, dir))
	}
	out := map[string]target{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var rec struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		t, err := captured(dir, filepath.Base(f), mockURL)
		if err != nil {
			return nil, err
		}
		out[rec.Model] = t
	}
	return out, nil
}
