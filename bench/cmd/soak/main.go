// Command soak is the load of `bench/run.sh soak` and `bench/run.sh outage` (issue 48, items
// 1 and 2): an open-loop (fixed arrival rate) mixed load on one server, sampled from its
// METRICS_ADDR.
//
//	soak -mode soak|outage -server URL -key KEY -metrics URL -database-url URL -out DIR
//	     [-rate 1000] [-duration 10m] [-mix ephemeral=60,stored=30,agent=6,embed=4,background=0]
//	     [-feeds 20] [-sample 10s] [-chunks 2000]
//	     [-pgcluster scripts/pgcluster.sh -pgdata DIR -pgport N -outage-at 20s -outage-for 20s]
//
// The mix: ephemeral chat completions (POST /v1/chat/completions), stored responses (POST
// /v1/responses), a deployed agent's turns (POST /api/agents/{id}/chat) and the webchat embed
// route (POST /embed/{deploymentId}/chat, as the widget sends it) and background responses
// (POST /v1/responses with background: true, each of which must end completed), their
// shares per 100 requests (-mix); -feeds event feeds (GET /v1/events) held open throughout; a webhook
// endpoint subscribed to -webhook-events (every event by default), served here, counting the signed deliveries. The
// agent is bench/run.sh agents' (benchkit.SetupAgent), over -chunks chunks.
//
// Every -sample the server's /metrics is read (go_goroutines, process_resident_memory_bytes,
// the pool's connections, the feeds' subscriptions) and the database's connections to the
// bench database (pg_stat_activity). The report: the outcomes per route, p50/p99/max of the
// 2xx, the samples and the least-squares slope of memory and goroutines over the last 80%
// of the run (per minute), the database's growth per 1,000 turns stored, the feeds and the
// deliveries; samples.csv, seconds.csv, waits.csv and chart.svg in -out.
//
// -mode outage also stops PostgreSQL at -outage-at for -outage-for (pgcluster.sh stop, then
// start) and reports the outcomes per second, the time from PostgreSQL's return to the first
// 2xx per route and to the 2xx rate back at the target, goroutines and connections before
// and after, and that every stored response and agent turn acknowledged 2xx is in the
// database. The exit status is 1 when a 5xx other than 503 database_unavailable with
// Retry-After was answered, or an acknowledged request is missing.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard/bench/benchkit"
)

type options struct {
	mode, server, key, metrics, dbURL, out string
	rate                                   float64
	duration, sample, waitSample           time.Duration
	mix                                    [nRoutes]int
	feeds, chunks, maxInflight             int
	agentModel, chatModel, webhookEvents   string
	pgcluster, pgdata, pgport              string
	outageAt, outageFor                    time.Duration
}

func main() {
	var o options
	var mix string
	flag.StringVar(&o.mode, "mode", "soak", "soak or outage")
	flag.StringVar(&o.server, "server", "", "the server's base URL")
	flag.StringVar(&o.key, "key", "", "an API key of the workspace")
	flag.StringVar(&o.metrics, "metrics", "", "the server's METRICS_ADDR as a URL (http://HOST:PORT)")
	flag.StringVar(&o.dbURL, "database-url", "", "the server's database (sizes, connections, the acknowledged rows)")
	flag.StringVar(&o.out, "out", "", "directory for samples.csv, seconds.csv and chart.svg")
	flag.Float64Var(&o.rate, "rate", 1000, "requests per second (open loop)")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "duration of the load")
	flag.DurationVar(&o.sample, "sample", 10*time.Second, "interval of the /metrics samples")
	flag.DurationVar(&o.waitSample, "wait-sample", 500*time.Millisecond, "interval of the pg_stat_activity samples written to waits.csv (0: none)")
	flag.StringVar(&mix, "mix", "ephemeral=60,stored=30,agent=6,embed=4", "the routes' shares per cycle")
	flag.IntVar(&o.feeds, "feeds", 20, "event feeds (GET /v1/events) held open")
	flag.StringVar(&o.webhookEvents, "webhook-events", "*", "the event types the webhook endpoint subscribes to, comma-separated (*: every event)")
	flag.IntVar(&o.chunks, "chunks", 2000, "knowledge chunks of the agent")
	flag.IntVar(&o.maxInflight, "max-inflight", 20000, "requests in flight at most (more are counted as not sent)")
	flag.StringVar(&o.agentModel, "agent-model", "beta-5.4-mini", "the agent's model (MODELS_FILE: upstream with search=1)")
	flag.StringVar(&o.chatModel, "chat-model", "beta-5.4", "the ephemeral and stored requests' model")
	flag.StringVar(&o.pgcluster, "pgcluster", "scripts/pgcluster.sh", "outage: the script that stops and starts PostgreSQL")
	flag.StringVar(&o.pgdata, "pgdata", "", "outage: the cluster's data directory")
	flag.StringVar(&o.pgport, "pgport", "", "outage: the cluster's port")
	flag.DurationVar(&o.outageAt, "outage-at", 20*time.Second, "outage: when PostgreSQL is stopped, from the start of the load")
	flag.DurationVar(&o.outageFor, "outage-for", 20*time.Second, "outage: how long it stays stopped")
	flag.Parse()
	var err error
	if o.mix, err = parseMix(mix); err != nil {
		fail(err)
	}
	if o.server == "" || o.key == "" || o.metrics == "" || o.dbURL == "" {
		fail(fmt.Errorf("-server, -key, -metrics and -database-url are required"))
	}
	if o.mode == "outage" && (o.pgdata == "" || o.pgport == "") {
		fail(fmt.Errorf("-mode outage needs -pgdata and -pgport"))
	}
	o.server = strings.TrimSuffix(o.server, "/")
	if err := run(o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, "soak: "+format+"\n", args...) }

// The routes of the mix, in this order (route indexes).
const nRoutes = 5

var routeNames = [nRoutes]string{"ephemeral", "stored", "agent", "embed", "background"}

func parseMix(s string) ([nRoutes]int, error) {
	var w [nRoutes]int
	for _, part := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 0 {
			return w, fmt.Errorf("-mix: %q is not route=share", part)
		}
		found := false
		for i, r := range routeNames {
			if r == name {
				w[i], found = n, true
			}
		}
		if !found {
			return w, fmt.Errorf("-mix: unknown route %q (ephemeral, stored, agent, embed, background)", name)
		}
	}
	if mixTotal(w) == 0 {
		return w, fmt.Errorf("-mix: every share is 0")
	}
	return w, nil
}

// results is what the records add up to.
type results struct {
	mu       sync.Mutex
	perRoute [nRoutes][nOutcomes]int
	lat      [nRoutes][]time.Duration // of the 2xx
	// windows are the 2xx latencies by route and by window of windowSecs seconds (the
	// window the request was due in), for latency.csv and the chart's p99 panel.
	windows   [nRoutes]map[int][]time.Duration
	seconds   *Seconds
	firstErr  [nRoutes]map[outcome]string
	storedIDs []string
	// backgroundIDs are the background responses acknowledged (queued): each must end
	// completed, the outage's included.
	backgroundIDs []string
	convTurns     map[string]int     // agent conversation -> turns acknowledged
	firstOK       [nRoutes]time.Time // first 2xx answered after PostgreSQL's return (outage)
	returned      time.Time
}

func (r *results) add(rec record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.perRoute[rec.route][rec.outcome]++
	r.seconds.Add(rec.due, rec.outcome)
	if rec.outcome == outOK {
		r.lat[rec.route] = append(r.lat[rec.route], rec.done.Sub(rec.due))
		if r.windows[rec.route] == nil {
			r.windows[rec.route] = map[int][]time.Duration{}
		}
		wi := r.seconds.Index(rec.due) / windowSecs
		r.windows[rec.route][wi] = append(r.windows[rec.route][wi], rec.done.Sub(rec.due))
		switch routeNames[rec.route] {
		case "stored":
			r.storedIDs = append(r.storedIDs, rec.id)
		case "background":
			r.backgroundIDs = append(r.backgroundIDs, rec.id)
		case "agent":
			r.convTurns[rec.id]++
		}
		if !r.returned.IsZero() && rec.done.After(r.returned) && (r.firstOK[rec.route].IsZero() || rec.done.Before(r.firstOK[rec.route])) {
			r.firstOK[rec.route] = rec.done
		}
	} else if r.firstErr[rec.route][rec.outcome] == "" {
		r.firstErr[rec.route][rec.outcome] = rec.errText
	}
}

func (r *results) markReturned(t time.Time) {
	r.mu.Lock()
	r.returned = t
	r.mu.Unlock()
}

func run(o options) error {
	ctx := context.Background()
	c := benchkit.NewCorpus(48, 20_000)
	doc := c.Document(o.chunks)
	say("setting up the agent (%d chunks), the webhook receiver and %d feeds ...", o.chunks, o.feeds)
	agent, err := benchkit.SetupAgent(ctx, o.server, o.key, o.agentModel, doc)
	if err != nil {
		return err
	}
	rc := benchkit.NewReceiver()
	stopHooks, err := rc.ListenFor(ctx, o.server, o.key, o.subscribed())
	if err != nil {
		return err
	}
	defer stopHooks()
	seq0, _ := eventSeq(ctx, o.dbURL)
	size0, err := dbSize(ctx, o.dbURL)
	if err != nil {
		return err
	}
	loadCtx, stopFeeds := context.WithCancel(ctx)
	fd := &feeds{server: o.server, key: o.key}
	fd.run(loadCtx, o.feeds, seq0)

	rts := routes(o.server, o.key, o.agentModel, o.chatModel, agent, c, o.mix)
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096, IdleConnTimeout: 30 * time.Second}}
	res := &results{convTurns: map[string]int{}}
	for i := range res.firstErr {
		res.firstErr[i] = map[outcome]string{}
	}

	// The sampler: t=0 just before the load, then every o.sample until the load's end.
	smp := &sampler{metrics: o.metrics, dbURL: o.dbURL, server: o.server}
	begin := time.Now()
	res.seconds = NewSeconds(begin)
	samplerDone := make(chan struct{})
	sampleCtx, stopSampler := context.WithCancel(ctx)
	go func() {
		defer close(samplerDone)
		smp.loop(sampleCtx, begin, o.sample)
	}()
	waitsDone := waitSampler(sampleCtx, o.dbURL, o.out, begin, o.waitSample)

	// The outage: PostgreSQL stopped at outageAt, started outageFor later.
	var outage outageTimes
	var outageWG sync.WaitGroup
	if o.mode == "outage" {
		outageWG.Add(1)
		go func() {
			defer outageWG.Done()
			outage = runOutage(o, begin, res)
		}()
	}
	say("%s: %.0f requests/s for %s, mix %s ...", o.mode, o.rate, o.duration, mixText(o.mix))
	_, sent, skipped := openLoop(ctx, client, rts, o.rate, o.duration, o.maxInflight, res.add)
	loadEnd := time.Since(begin)
	outageWG.Wait()
	stopSampler()
	<-samplerDone
	<-waitsDone
	// Settled: a last sample 5 s after the load (the in-flight work done, idle connections kept).
	time.Sleep(5 * time.Second)
	settled := smp.take(ctx, begin)
	stopFeeds()

	// The deliveries of every event the load committed (up to 60 s to drain).
	seq1, _ := eventSeq(ctx, o.dbURL)
	events := seq1 - seq0
	if types := o.subscribed(); types != nil {
		events, _ = eventsOfTypes(ctx, o.dbURL, seq0, types)
	}
	deadline := time.Now().Add(60 * time.Second)
	for int64(rc.Count()) < events && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	hooks := rc.Stats()
	size1, err := dbSize(ctx, o.dbURL)
	if err != nil {
		return err
	}

	rep := report{o: o, rts: rts, res: res, sent: sent, skipped: skipped, loadEnd: loadEnd, samples: smp.all(), settled: settled,
		feeds: fd, events: events, hooks: hooks, size0: size0, size1: size1, outage: outage, agent: agent}
	if o.mode == "outage" {
		rep.missing, rep.checked, err = checkAcknowledged(ctx, o.dbURL, res)
		if err != nil {
			return err
		}
	}
	if len(res.backgroundIDs) > 0 {
		rep.background, err = waitBackground(ctx, o.dbURL, res.backgroundIDs, 2*time.Minute)
		if err != nil {
			return err
		}
	}
	bad := rep.print(os.Stdout)
	if o.out != "" {
		if err := rep.write(o.out); err != nil {
			return err
		}
	}
	if bad {
		os.Exit(1)
	}
	return nil
}

func mixTotal(w [nRoutes]int) int {
	n := 0
	for _, x := range w {
		n += x
	}
	return n
}

func mixText(w [nRoutes]int) string {
	var parts []string
	for i, n := range w {
		parts = append(parts, fmt.Sprintf("%s %d", routeNames[i], n))
	}
	return strings.Join(parts, ", ") + " per cycle"
}

// outageTimes are when PostgreSQL went and came back, from the start of the load.
type outageTimes struct {
	stopAt, stopped, startAt, started time.Duration
	err                               error
}

func runOutage(o options, begin time.Time, res *results) outageTimes {
	var t outageTimes
	time.Sleep(time.Until(begin.Add(o.outageAt)))
	t.stopAt = time.Since(begin)
	say("stopping PostgreSQL at %s ...", t.stopAt.Round(time.Millisecond))
	if out, err := exec.Command(o.pgcluster, "stop", o.pgdata).CombinedOutput(); err != nil {
		t.err = fmt.Errorf("pgcluster stop: %v: %s", err, out)
		return t
	}
	t.stopped = time.Since(begin)
	time.Sleep(time.Until(begin.Add(o.outageAt + o.outageFor)))
	t.startAt = time.Since(begin)
	say("starting PostgreSQL at %s ...", t.startAt.Round(time.Millisecond))
	if out, err := exec.Command(o.pgcluster, "start", o.pgdata, o.pgport).CombinedOutput(); err != nil {
		t.err = fmt.Errorf("pgcluster start: %v: %s", err, out)
		return t
	}
	t.started = time.Since(begin)
	res.markReturned(begin.Add(t.started))
	say("PostgreSQL accepts connections again at %s", t.started.Round(time.Millisecond))
	return t
}

func dbSize(ctx context.Context, url string) (int64, error) {
	var n int64
	err := query(ctx, url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	})
	return n, err
}

// eventSeq is the sum of the workspaces' event cursors: the events ever committed.
// subscribed is -webhook-events as a subscription: nil for every event.
func (o options) subscribed() []string {
	var types []string
	for _, t := range strings.Split(o.webhookEvents, ",") {
		if t = strings.TrimSpace(t); t == "*" {
			return nil
		} else if t != "" {
			types = append(types, t)
		}
	}
	return types
}

// eventsOfTypes counts the events of these types after seq (the bench has one workspace).
func eventsOfTypes(ctx context.Context, url string, seq int64, types []string) (int64, error) {
	var n int64
	err := query(ctx, url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*) FROM events WHERE seq > $1 AND type = ANY($2)`, seq, types).Scan(&n)
	})
	return n, err
}

func eventSeq(ctx context.Context, url string) (int64, error) {
	var n int64
	err := query(ctx, url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT coalesce(sum(event_seq), 0)::bigint FROM workspaces`).Scan(&n)
	})
	return n, err
}

// query runs f on a connection of its own, closed after (it may fail while PostgreSQL is
// down; a pool would keep broken connections).
func query(ctx context.Context, url string, f func(*pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return f(c)
}

// checkAcknowledged counts the acknowledged stored responses missing from `responses` and
// the agent conversations holding fewer user messages than the turns acknowledged in them.
func checkAcknowledged(ctx context.Context, url string, res *results) (missing, checked int, err error) {
	res.mu.Lock()
	ids := append([]string(nil), res.storedIDs...)
	convs := make([]string, 0, len(res.convTurns))
	for id := range res.convTurns {
		convs = append(convs, id)
	}
	turns := res.convTurns
	res.mu.Unlock()
	err = query(ctx, url, func(c *pgx.Conn) error {
		var found int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM responses WHERE short_id = ANY($1)`, ids).Scan(&found); err != nil {
			return err
		}
		missing += len(ids) - found
		checked += len(ids)
		// The answer's conversation_id is the short id; the uuid is matched too, to be sure.
		rows, err := c.Query(ctx, `SELECT CASE WHEN c.short_id = ANY($1) THEN c.short_id ELSE c.id::text END,
				count(m.*) FILTER (WHERE m.role = 'user')
			FROM conversations c LEFT JOIN messages m ON m.conversation_id = c.id
			WHERE c.short_id = ANY($1) OR c.id::text = ANY($1) GROUP BY 1`, convs)
		if err != nil {
			return err
		}
		stored := map[string]int{}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			stored[id] = n
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range convs {
			checked += turns[id]
			if d := turns[id] - stored[id]; d > 0 {
				missing += d
			}
		}
		return nil
	})
	return missing, checked, err
}

// backgroundOutcome is what became of the acknowledged background responses.
type backgroundOutcome struct {
	acknowledged, completed, failed, pending int
	waited                                   time.Duration
}

// waitBackground waits (up to limit) until every acknowledged background response is
// finished, and counts how each ended.
func waitBackground(ctx context.Context, url string, ids []string, limit time.Duration) (backgroundOutcome, error) {
	out := backgroundOutcome{acknowledged: len(ids)}
	start := time.Now()
	for {
		var completed, failed int
		err := query(ctx, url, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'),
					count(*) FILTER (WHERE status NOT IN ('completed', 'queued', 'in_progress'))
				FROM responses WHERE short_id = ANY($1)`, ids).Scan(&completed, &failed)
		})
		if err != nil {
			return out, err
		}
		out.completed, out.failed, out.pending = completed, failed, len(ids)-completed-failed
		out.waited = time.Since(start)
		if out.pending == 0 || out.waited >= limit {
			return out, nil
		}
		time.Sleep(time.Second)
	}
}
