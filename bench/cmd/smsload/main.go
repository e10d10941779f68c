// Command smsload is the load of `bench/run.sh sms` (issue 40): two-way SMS at a fixed rate
// against two replicas of one database while the model takes seconds, with one replica
// killed halfway, and a check that every message was answered exactly once.
//
//	smsload -a URL -b URL -key KEY -carrier URL -database-url URL [-kill-pid PID] [flags]
//	smsload chart -o FILE LABEL=results.json ...   (the per-second p99 of several runs)
//
// It creates a text agent (POST /api/agents), connects the SMS channel of -number (POST
// /api/channels; the fake carrier must hold the number) and deploys the agent on it
// (deploy_agent over MCP), all on replica A, whose address must be PUBLIC_BASE_URL: the
// carrier signs over the inbound URL, so every post is signed for A's URL, and posted
// alternately to A and B with the same path, as a load balancer in front of both would.
//
// Then -rate webhooks a second for -duration, open loop, each a distinct MessageSid from one
// of -senders numbers with a unique body ("question N"); -retries of them are posted again 1
// to 5 s later (the carrier retrying the same MessageSid). At -kill-at it sends SIGKILL to
// -kill-pid (replica B) and, -lb-delay later, posts only to A; a post that got no answer or
// a 5xx is posted again to A a second later (the carrier's retry), and counted as refused.
//
// Then it waits (-wait) until the carrier (bench/cmd/fakecarrier) has a reply for every
// message that was accepted (answered 200), and matches the replies to messages by the echo
// of the mock model (bench/mockllm echo=1: "re: question N"): each accepted message must have
// exactly one reply, to its sender. The database must agree: one inbound row per distinct
// MessageSid, none left received or answering, one reply each.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"switchboard/sms/smstest"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "chart" {
		if err := chartMain(os.Args[2:]); err != nil {
			fail(err)
		}
		return
	}
	var cfg loadConfig
	var key, number, carrier, databaseURL, model, jsonOut string
	var wait time.Duration
	var cpuSpec string
	flag.StringVar(&cfg.a, "a", "", "replica A's base URL; PUBLIC_BASE_URL of both replicas")
	flag.StringVar(&cfg.b, "b", "", "replica B's base URL (empty: all posts to A)")
	flag.StringVar(&key, "key", "", "an API key of the workspace")
	flag.StringVar(&number, "number", "+14155550100", "the channel's number (the fake carrier must hold it)")
	flag.StringVar(&carrier, "carrier", "", "the fake carrier's listing (fakecarrier -stats-addr), http://HOST:PORT")
	flag.StringVar(&databaseURL, "database-url", "", "the replicas' database, for the checks")
	flag.StringVar(&model, "model", "beta-5.4-mini", "the agent's model (MODELS_FILE points it at the mock's echo model)")
	flag.StringVar(&cfg.authToken, "auth-token", smstest.AuthToken, "the carrier's auth token (TWILIO_AUTH_TOKEN), which signs webhooks")
	flag.IntVar(&cfg.rate, "rate", 200, "webhooks a second")
	flag.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long the load lasts (whole seconds)")
	flag.IntVar(&cfg.senders, "senders", 2000, "distinct texters")
	flag.Float64Var(&cfg.retryFraction, "retries", 0.01, "fraction of messages the carrier posts twice")
	flag.IntVar(&cfg.killPID, "kill-pid", 0, "SIGKILL this process (replica B) at -kill-at (0: none)")
	flag.DurationVar(&cfg.killAt, "kill-at", 30*time.Second, "when to kill replica B, from the first post")
	flag.DurationVar(&cfg.lbDelay, "lb-delay", 0, "how long after the kill posts still go to B (a balancer's health check)")
	flag.BoolVar(&cfg.retryErrors, "retry-errors", true, "post a refused message (no answer, 5xx) again to A a second later")
	flag.DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the replies after the load")
	flag.StringVar(&cpuSpec, "cpu", "", "name=pid,... of the run's processes (a, b, postgres, ...), to report their CPU during the load beside the rest of the machine's")
	flag.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	flag.Parse()
	if cfg.a == "" || key == "" || carrier == "" || databaseURL == "" || cfg.rate < 1 || cfg.duration < time.Second {
		fmt.Fprintln(os.Stderr, "usage: smsload -a URL [-b URL] -key KEY -carrier URL -database-url URL [-kill-pid PID] [flags]")
		os.Exit(2)
	}
	if cfg.b == "" {
		cfg.b, cfg.killPID = cfg.a, 0
	}
	cfg.to = number
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	say := func(s string) { fmt.Fprintln(os.Stderr, "smsload: "+s) }

	ch, err := setup(ctx, cfg.a, key, number, model)
	if err != nil {
		fail(err)
	}
	say("agent " + ch.AgentID + " deployed on channel " + ch.ID + ", inbound URL " + ch.InboundURL)
	cfg.inboundURL, cfg.path = ch.InboundURL, ch.Path
	if err := probe(ctx, cfg); err != nil {
		fail(err)
	}

	meter, err := newCPUMeter(cpuSpec)
	if err != nil {
		fail(err)
	}
	l := newLoader(cfg)
	l.beforeKill = func() { meter.final("b") }
	say(fmt.Sprintf("%d webhooks a second for %s from %d senders, alternately to A and B", cfg.rate, cfg.duration, cfg.senders))
	sampling, stopSampling := context.WithCancel(ctx)
	waits := sampleWaits(sampling, databaseURL, 200*time.Millisecond)
	tx0 := transactions(ctx, databaseURL)
	meter.begin()
	l.run(ctx)
	loadEnd := time.Now()
	cpuLoad := meter.window()
	stopSampling()
	say(fmt.Sprintf("load done in %s; waiting up to %s for the replies", loadEnd.Sub(l.start).Round(time.Millisecond), wait))
	sent, complete, err := waitReplies(ctx, carrier, l.msgs, wait, 5*time.Second, say)
	if err != nil {
		fail(err)
	}
	cpuAll := meter.window()
	time.Sleep(time.Second) // PostgreSQL publishes its counters at most once a second
	txs := transactions(ctx, databaseURL) - tx0
	// The status callbacks of the last replies left a second after them (fakecarrier), within
	// the grace of waitReplies.
	cs, err := getCarrierStats(ctx, carrier)
	if err != nil {
		fail(err)
	}
	facts, err := queryDB(ctx, databaseURL, ch.ID)
	if err != nil {
		fail(fmt.Errorf("database checks: %w", err))
	}
	rep := report(l, loadEnd, matchReplies(l.msgs, sent), complete, facts)
	rep.Carrier = cs
	rep.Waits = <-waits
	rep.CPULoad, rep.CPUAll, rep.Transactions = cpuLoad, cpuAll, txs
	rep.print(os.Stdout)
	if jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
			fail(err)
		}
	}
	if !rep.ExactlyOnce {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "smsload: "+err.Error())
	os.Exit(1)
}

// probe checks, before the load, that a post to each replica with a bad signature is
// refused (403): the path is right and the check is on, so the 200s of the run mean stored.
func probe(ctx context.Context, cfg loadConfig) error {
	for _, base := range []string{cfg.a, cfg.b} {
		form := smstest.InboundForm("+12125550000", cfg.to, "probe", "")
		resp, err := smstest.PostWithSignature(ctx, nil, base+cfg.path, form, "bad")
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			return fmt.Errorf("a badly signed webhook to %s got %s, not 403: %s", base, resp.Status, b)
		}
	}
	return nil
}

// latencies are the percentiles of a set of webhook answers (nearest rank).
type latencies struct {
	N                   int
	P50, P90, P99, P999 time.Duration
	Max                 time.Duration
	Over50ms, Over250ms int
}

func latencyOf(ds []time.Duration) latencies {
	slices.Sort(ds)
	l := latencies{N: len(ds)}
	pct := func(q float64) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		return ds[min(max(int(math.Ceil(q*float64(len(ds))))-1, 0), len(ds)-1)]
	}
	l.P50, l.P90, l.P99, l.P999 = pct(0.5), pct(0.9), pct(0.99), pct(0.999)
	if len(ds) > 0 {
		l.Max = ds[len(ds)-1]
	}
	for _, d := range ds {
		if d > 50*time.Millisecond {
			l.Over50ms++
		}
		if d > 250*time.Millisecond {
			l.Over250ms++
		}
	}
	return l
}

// second is what the webhooks posted in one second of the run got.
type second struct {
	At                 int // seconds from the first post
	Posts, OK, Refused int
	P50, P99, Max      time.Duration // of the 200s
}

func timeline(l *loader) []second {
	n := int(l.cfg.duration/time.Second) + 1
	lat := make([][]time.Duration, n)
	out := make([]second, n)
	for _, a := range l.attempts {
		i := min(max(int(a.start.Sub(l.start)/time.Second), 0), n-1)
		out[i].Posts++
		if a.status == http.StatusOK {
			out[i].OK++
			lat[i] = append(lat[i], a.latency)
		} else {
			out[i].Refused++
		}
	}
	for i := range out {
		out[i].At = i
		l := latencyOf(lat[i])
		out[i].P50, out[i].P99, out[i].Max = l.P50, l.P99, l.Max
	}
	return out
}

// Report is the outcome of a run.
type Report struct {
	Rate, Senders             int
	Duration                  time.Duration
	KilledAt                  time.Duration // from the first post; 0: no kill
	KillError                 string        `json:",omitempty"`
	LoadTook                  time.Duration
	MaxScheduleLag            time.Duration // how late the generator's latest post left
	Posts                     map[string]int
	PostsByOutcome            map[string]int // "replica kind outcome"
	Webhook, WebhookFirst     latencies      // 200 answers: every post; first posts only
	WebhookAfterKill          latencies      // 200 answers of posts sent in the 10 s after the kill
	Messages, Accepted        int
	AcceptedFirst             int // accepted on the first post
	NeverAccepted             int
	StoredNotAccepted         int // in the database although no post of it got a 200
	CarrierSMS                int
	Answered                  int // accepted messages with exactly one reply
	Missing                   int // accepted messages without a reply
	Duplicates                int // accepted messages with more than one reply
	ExtraSMS                  int // SMS beyond one per message
	WrongRecipient, Unmatched int
	RepliesToUnaccepted       int
	Complete                  bool // every accepted message had a reply before the wait ended
	LastReplyAfterKill        time.Duration
	LastReplyAfterLoad        time.Duration
	DB                        dbFacts
	Carrier                   carrierStats
	CPULoad, CPUAll           *cpuWindow // during the load; until the last reply (and 5 s more)
	Transactions              int64      // database transactions from the first post to the last reply
	Timeline                  []second   // the webhooks by the second they were posted in
	start                     time.Time
	Waits                     map[string]int // database sessions seen during the load, by wait event and query; "": samples
	DBAgrees                  bool
	ExactlyOnce               bool
	notes                     []string
}

func report(l *loader, loadEnd time.Time, r replies, complete bool, f dbFacts) *Report {
	rep := &Report{Rate: l.cfg.rate, Senders: l.cfg.senders, Duration: l.cfg.duration, LoadTook: loadEnd.Sub(l.start),
		Posts: map[string]int{}, PostsByOutcome: map[string]int{}, Messages: len(l.msgs), CarrierSMS: r.total,
		WrongRecipient: r.wrongTo, Unmatched: r.unknown, Complete: complete, DB: f, start: l.start}
	if !l.killedAt.IsZero() {
		rep.KilledAt = l.killedAt.Sub(l.start)
		if l.killErr != nil {
			rep.KillError = l.killErr.Error()
		}
	}
	var all, first, afterKill []time.Duration
	for _, a := range l.attempts {
		rep.Posts[a.kind]++
		rep.MaxScheduleLag = max(rep.MaxScheduleLag, a.sched)
		outcome := "200"
		switch {
		case a.err != "":
			outcome = "no answer"
		case a.status != http.StatusOK:
			outcome = fmt.Sprint(a.status)
		}
		rep.PostsByOutcome[fmt.Sprintf("%c %s %s", a.replica-32, a.kind, outcome)]++
		if a.status != http.StatusOK {
			continue
		}
		all = append(all, a.latency)
		if a.kind == kindFirst {
			first = append(first, a.latency)
		}
		if !l.killedAt.IsZero() && !a.start.Before(l.killedAt) && a.start.Before(l.killedAt.Add(10*time.Second)) {
			afterKill = append(afterKill, a.latency)
		}
	}
	rep.Webhook, rep.WebhookFirst, rep.WebhookAfterKill = latencyOf(all), latencyOf(first), latencyOf(afterKill)
	rep.Timeline = timeline(l)
	stored := 0
	for i, m := range l.msgs {
		if f.StoredSIDs[m.sid] {
			stored++
		}
		n := r.perMessage[i]
		if !m.accepted {
			rep.NeverAccepted++
			if f.StoredSIDs[m.sid] {
				rep.StoredNotAccepted++
			}
			if n > 0 {
				rep.RepliesToUnaccepted++
			}
			if n > 1 {
				rep.ExtraSMS += n - 1
			}
			continue
		}
		rep.Accepted++
		if m.firstAccepted {
			rep.AcceptedFirst++
		}
		switch n {
		case 0:
			rep.Missing++
		case 1:
			rep.Answered++
		default:
			rep.Duplicates++
			rep.ExtraSMS += n - 1
		}
	}
	if !r.last.IsZero() {
		if !l.killedAt.IsZero() {
			rep.LastReplyAfterKill = r.last.Sub(l.killedAt)
		}
		rep.LastReplyAfterLoad = r.last.Sub(l.start.Add(l.cfg.duration)) // after the last scheduled post
	}
	// The database agrees when it holds each message of the run once (accepted, or stored
	// although its answer was lost), nothing else, none of them unfinished, and one reply each.
	unfinished := f.InboundByStatus["received"] + f.InboundByStatus["answering"]
	rep.DBAgrees = f.Inbound == stored && stored == rep.Accepted+rep.StoredNotAccepted && unfinished == 0 && f.InboundNoReply == 0 &&
		f.Outbound == f.Inbound && f.WrongText == 0
	if f.Inbound != len(f.StoredSIDs) || f.Inbound != stored {
		rep.notes = append(rep.notes, fmt.Sprintf("the database holds %d inbound rows, %d of this run's MessageSids", f.Inbound, stored))
	}
	rep.ExactlyOnce = rep.Missing == 0 && rep.Duplicates == 0 && rep.ExtraSMS == 0 && r.wrongTo == 0 && r.unknown == 0 && rep.DBAgrees
	return rep
}

// ms0 is d in whole milliseconds.
func ms0(d time.Duration) string { return fmt.Sprint(d.Round(time.Millisecond).Milliseconds()) }

func (rep *Report) print(w io.Writer) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	s := func(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
	lat := func(l latencies) string {
		return fmt.Sprintf("n %d, p50 %s, p90 %s, p99 %s, p99.9 %s, max %s; over 50 ms: %d, over 250 ms: %d",
			l.N, ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max), l.Over50ms, l.Over250ms)
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(t, "%s\t%s\n", k, v) }
	row("load", fmt.Sprintf("%d webhooks/s for %s from %d senders (took %s; the generator's worst lag %s)", rep.Rate, rep.Duration, rep.Senders, s(rep.LoadTook), ms(rep.MaxScheduleLag)))
	if rep.KilledAt > 0 {
		k := fmt.Sprintf("SIGKILL at %s", s(rep.KilledAt))
		if rep.KillError != "" {
			k += " (failed: " + rep.KillError + ")"
		}
		row("replica B", k)
	}
	var posts []string
	for _, k := range slices.Sorted(maps.Keys(rep.Posts)) {
		posts = append(posts, fmt.Sprintf("%s %d", k, rep.Posts[k]))
	}
	row("posts", strings.Join(posts, ", "))
	var outcomes []string
	for _, k := range slices.Sorted(maps.Keys(rep.PostsByOutcome)) {
		outcomes = append(outcomes, fmt.Sprintf("%s: %d", k, rep.PostsByOutcome[k]))
	}
	row("outcomes", strings.Join(outcomes, "; "))
	row("webhook 200s, all", lat(rep.Webhook))
	row("webhook 200s, first posts", lat(rep.WebhookFirst))
	if rep.KilledAt > 0 {
		row("webhook 200s, 10 s after kill", lat(rep.WebhookAfterKill))
	}
	row("messages", fmt.Sprintf("%d; accepted %d (%d on the first post), never accepted %d (of them stored anyway %d)",
		rep.Messages, rep.Accepted, rep.AcceptedFirst, rep.NeverAccepted, rep.StoredNotAccepted))
	row("carrier", fmt.Sprintf("%d SMS sent; accepted messages answered once %d, missing %d, duplicated %d (extra SMS %d); wrong recipient %d, unmatched %d; replies to never-accepted %d",
		rep.CarrierSMS, rep.Answered, rep.Missing, rep.Duplicates, rep.ExtraSMS, rep.WrongRecipient, rep.Unmatched, rep.RepliesToUnaccepted))
	if rep.KilledAt > 0 {
		row("last reply", fmt.Sprintf("%s after the kill, %s after the load ended", s(rep.LastReplyAfterKill), s(rep.LastReplyAfterLoad)))
	} else {
		row("last reply", fmt.Sprintf("%s after the load ended", s(rep.LastReplyAfterLoad)))
	}
	f := rep.DB
	row("database", fmt.Sprintf("inbound %d %v; outbound %d %v; inbound without a reply %d", f.Inbound, f.InboundByStatus, f.Outbound, f.OutbndByStatus, f.InboundNoReply))
	row("conversations", fmt.Sprintf("%d threads, %d user messages in them", f.Threads, f.UserTurns))
	row("delivery reports", fmt.Sprintf("%d posted by the carrier, %d refused; replies not 'delivered' after them: %d",
		rep.Carrier.StatusCallbacks, rep.Carrier.StatusCallbackErrors, f.Outbound-f.OutbndByStatus["delivered"]))
	row("reply time", fmt.Sprintf("stored -> reply claimed: p50 %s, p99 %s, max %s", s(f.ReplyP50), s(f.ReplyP99), s(f.ReplyMax)))
	rescue := ""
	if !f.RescuedAt.IsZero() && rep.KilledAt > 0 {
		rescue = fmt.Sprintf(" (requeued %s after the kill; the last of their replies %s after it)",
			s(f.RescuedAt.Sub(rep.start.Add(rep.KilledAt))), s(f.LastRescuedAt.Sub(rep.start.Add(rep.KilledAt))))
	}
	row("reply jobs", fmt.Sprintf("%v; rescued from the dead replica %d%s, run more than once %d", f.JobsByState, f.JobsRescued, rescue, f.JobsRerun))
	row("replies with another message's text", fmt.Sprint(f.WrongText))
	for _, w := range f.WrongTextSamples {
		row("", w)
	}
	for _, n := range rep.notes {
		row("note", n)
	}
	var secs []string
	for _, sec := range rep.Timeline {
		if sec.Posts > 0 {
			secs = append(secs, fmt.Sprintf("%d:%d/%s/%s", sec.At, sec.Refused, ms0(sec.P99), ms0(sec.Max)))
		}
	}
	row("by second", "second:refused/p99/max of the 200s: "+strings.Join(secs, " "))
	cpuRow := func(name string, c *cpuWindow) {
		if c == nil || c.CPUs == 0 {
			return
		}
		var procs []string
		for _, k := range slices.Sorted(maps.Keys(c.ByProcess)) {
			procs = append(procs, fmt.Sprintf("%s %.1f", k, c.ByProcess[k]))
		}
		row(name, fmt.Sprintf("of %.0f CPU-s (%d CPUs for %s): the run's processes %.1f (%s), the rest of the machine %.1f, stolen by the hypervisor %.1f",
			float64(c.CPUs)*c.Elapsed.Seconds(), c.CPUs, s(c.Elapsed), c.Ours, strings.Join(procs, ", "), c.Others, c.Stolen))
	}
	cpuRow("CPU during the load", rep.CPULoad)
	cpuRow("CPU until the replies", rep.CPUAll)
	if c := rep.CPUAll; c != nil && rep.Accepted > 0 {
		per := func(names ...string) float64 {
			t := 0.0
			for _, n := range names {
				t += c.ByProcess[n]
			}
			return t * 1000 / float64(rep.Accepted)
		}
		row("per message", fmt.Sprintf("CPU of the replicas %.1f ms, of PostgreSQL %.1f ms; %.1f database transactions (webhook, reply job, delivery report; over the whole run)",
			per("a", "b"), per("postgres"), float64(rep.Transactions)/float64(rep.Accepted)))
	}
	if n := rep.Waits[""]; n > 0 {
		keys := slices.Collect(maps.Keys(rep.Waits))
		slices.SortFunc(keys, func(a, b string) int { return rep.Waits[b] - rep.Waits[a] })
		var top []string
		for _, k := range keys {
			if k != "" && len(top) < 8 {
				top = append(top, fmt.Sprintf("%s %.1f", k, float64(rep.Waits[k])/float64(n)))
			}
		}
		row("database sessions", fmt.Sprintf("during the load, on average (%d samples): %s", n, strings.Join(top, "; ")))
	}
	row("database agrees", yes(rep.DBAgrees))
	row("every message answered exactly once", yes(rep.ExactlyOnce))
	row("webhook p99 under 50 ms", yes(rep.Webhook.P99 < 50*time.Millisecond))
	_ = t.Flush()
}
