package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// sentSMS is an SMS the fake carrier was asked to send (fakecarrier's /messages).
type sentSMS struct {
	SID  string    `json:"sid"`
	To   string    `json:"to"`
	Body string    `json:"body"`
	At   time.Time `json:"at"`
}

// carrierStats are fakecarrier's counts (/stats).
type carrierStats struct {
	Messages             int `json:"messages"`
	StatusCallbacks      int `json:"status_callbacks"`
	StatusCallbackErrors int `json:"status_callback_errors"`
}

func getCarrierStats(ctx context.Context, carrier string) (carrierStats, error) {
	var st carrierStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, carrier+"/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func carrierMessages(ctx context.Context, carrier string) ([]sentSMS, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, carrier+"/messages", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list []sentSMS
	return list, json.NewDecoder(resp.Body).Decode(&list)
}

// echoed finds which message a reply answers: the mock's echo carries its body.
var echoed = regexp.MustCompile(`question (\d+)`)

// replies is the carrier's record read against the messages of the run.
type replies struct {
	perMessage []int // replies to each message
	last       time.Time
	wrongTo    int // a reply to message n sent to another number than its sender
	unknown    int // a reply that names no message of the run
	total      int
}

func matchReplies(msgs []*message, sent []sentSMS) replies {
	r := replies{perMessage: make([]int, len(msgs)), total: len(sent)}
	for _, s := range sent {
		sub := echoed.FindStringSubmatch(s.Body)
		n := -1
		if sub != nil {
			n, _ = strconv.Atoi(sub[1])
		}
		if n < 0 || n >= len(msgs) {
			r.unknown++
			continue
		}
		if s.To != msgs[n].from {
			r.wrongTo++
			continue
		}
		r.perMessage[n]++
		if s.At.After(r.last) {
			r.last = s.At
		}
	}
	return r
}

// waitReplies polls the carrier until every accepted message has a reply, or until timeout;
// then it waits grace more (a late duplicate would show then) and returns the final record.
func waitReplies(ctx context.Context, carrier string, msgs []*message, timeout, grace time.Duration, progress func(string)) ([]sentSMS, bool, error) {
	deadline := time.Now().Add(timeout)
	accepted := 0
	for _, m := range msgs {
		if m.accepted {
			accepted++
		}
	}
	last, lastChange := -1, time.Now()
	for {
		// The cheap count first; the whole list (12,000 SMS are 1.5 MB of JSON, and CPU
		// taken from the server) only once there are as many SMS as accepted messages.
		st, err := getCarrierStats(ctx, carrier)
		if err != nil {
			return nil, false, err
		}
		if st.Messages != last {
			last, lastChange = st.Messages, time.Now()
		}
		if st.Messages < accepted && time.Now().Before(deadline) {
			progress(fmt.Sprintf("%d SMS at the carrier, %d accepted messages", st.Messages, accepted))
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(2 * time.Second):
			}
			continue
		}
		sent, err := carrierMessages(ctx, carrier)
		if err != nil {
			return nil, false, err
		}
		r := matchReplies(msgs, sent)
		waiting := 0
		for i, m := range msgs {
			if m.accepted && r.perMessage[i] == 0 {
				waiting++
			}
		}
		// As many SMS as accepted messages and none for 15 s: the ones still "waiting" got
		// another message's reply, and will not get their own.
		settled := time.Since(lastChange) > 15*time.Second
		if waiting == 0 || settled || time.Now().After(deadline) {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(grace):
			}
			sent, err = carrierMessages(ctx, carrier)
			return sent, waiting == 0, err
		}
		progress(fmt.Sprintf("%d SMS at the carrier, %d accepted messages without a reply yet", len(sent), waiting))
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// dbFacts is what the database says of the run's channel.
type dbFacts struct {
	Inbound                      int            `json:"inbound"`
	InboundByStatus              map[string]int `json:"inbound_by_status"`
	Outbound                     int            `json:"outbound"`
	OutbndByStatus               map[string]int `json:"outbound_by_status"`
	InboundNoReply               int            `json:"inbound_without_reply"`
	UnknownSIDs                  int            `json:"inbound_not_of_this_run"`
	ReplyP50, ReplyP99, ReplyMax time.Duration
	LastClaim                    time.Time       `json:"last_reply_claimed_at"`
	JobsByState                  map[string]int  `json:"reply_jobs_by_state"`
	JobsRescued                  int             `json:"reply_jobs_rescued"`
	JobsRerun                    int             `json:"reply_jobs_attempt_over_1"`
	LastRescuedAt                time.Time       `json:"last_rescued_reply_claimed_at"`
	RescuedAt                    time.Time       `json:"rescued_at"` // when the dead replica's jobs were requeued
	StoredSIDs                   map[string]bool `json:"-"`
	// The conversations of the channel (one per texter unless two first messages raced) and
	// the user messages recorded in them (one per answered message unless a turn ran twice).
	Threads   int `json:"threads"`
	UserTurns int `json:"user_messages_in_threads"`
	// Replies whose text is not the echo of the message they answer, with a few examples.
	WrongText        int      `json:"replies_with_another_messages_text"`
	WrongTextSamples []string `json:"wrong_text_samples,omitempty"`
}

func queryDB(ctx context.Context, databaseURL, channelID string) (dbFacts, error) {
	f := dbFacts{InboundByStatus: map[string]int{}, OutbndByStatus: map[string]int{}, JobsByState: map[string]int{}, StoredSIDs: map[string]bool{}}
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return f, err
	}
	defer pool.Close()
	group := func(into map[string]int, sql string, args ...any) (int, error) {
		rows, err := pool.Query(ctx, sql, args...)
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		total := 0
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return 0, err
			}
			into[k] = n
			total += n
		}
		return total, rows.Err()
	}
	if f.Inbound, err = group(f.InboundByStatus, `SELECT status || coalesce(' (' || reason || ')', ''), count(*) FROM channel_messages
		WHERE channel_id = $1 AND direction = 'inbound' GROUP BY 1`, channelID); err != nil {
		return f, err
	}
	if f.Outbound, err = group(f.OutbndByStatus, `SELECT status, count(*) FROM channel_messages
		WHERE channel_id = $1 AND direction = 'outbound' GROUP BY 1`, channelID); err != nil {
		return f, err
	}
	if _, err = group(f.JobsByState, `SELECT state::text, count(*) FROM river_job WHERE kind = 'channel_reply' GROUP BY 1`); err != nil {
		return f, err
	}
	rows, err := pool.Query(ctx, `SELECT provider_message_id FROM channel_messages WHERE channel_id = $1 AND direction = 'inbound'`, channelID)
	if err != nil {
		return f, err
	}
	for rows.Next() {
		var sid string
		if err := rows.Scan(&sid); err != nil {
			return f, err
		}
		f.StoredSIDs[sid] = true
	}
	if err := rows.Err(); err != nil {
		return f, err
	}
	var p50, p99, pmax float64
	var last *time.Time
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE o.id IS NULL),
			coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM o.created_at - i.created_at)), 0),
			coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM o.created_at - i.created_at)), 0),
			coalesce(max(extract(epoch FROM o.created_at - i.created_at)), 0), max(o.created_at)
		FROM channel_messages i LEFT JOIN channel_messages o ON o.reply_to = i.id
		WHERE i.channel_id = $1 AND i.direction = 'inbound'`, channelID).Scan(&f.InboundNoReply, &p50, &p99, &pmax, &last)
	if err != nil {
		return f, err
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	f.ReplyP50, f.ReplyP99, f.ReplyMax = sec(p50), sec(p99), sec(pmax)
	if last != nil {
		f.LastClaim = *last
	}
	// The mock echoes the message a turn answers ("re: " and its body): a reply with other
	// text is the answer to another message.
	rows, err = pool.Query(ctx, `SELECT i.body, i.remote, o.body, o.remote, coalesce(j.attempt, 0), coalesce(j.metadata->>'rescued_from', ''),
			coalesce(j.errors[1]->>'error', '')
		FROM channel_messages i JOIN channel_messages o ON o.reply_to = i.id
		LEFT JOIN river_job j ON j.kind = 'channel_reply' AND (j.args->>'message_id')::uuid = i.id
		WHERE i.channel_id = $1 AND i.direction = 'inbound' AND o.body <> 're: ' || i.body
		ORDER BY i.created_at`, channelID)
	if err != nil {
		return f, err
	}
	for rows.Next() {
		var in, from, out, to, rescued, jobErr string
		var attempt int
		if err := rows.Scan(&in, &from, &out, &to, &attempt, &rescued, &jobErr); err != nil {
			return f, err
		}
		f.WrongText++
		if len(f.WrongTextSamples) < 10 {
			f.WrongTextSamples = append(f.WrongTextSamples, fmt.Sprintf("%q from %s answered %q to %s (reply job attempt %d, rescued from %q, first error %q)",
				in, from, out, to, attempt, rescued, jobErr))
		}
	}
	if err := rows.Err(); err != nil {
		return f, err
	}
	err = pool.QueryRow(ctx, `SELECT count(DISTINCT t.conversation_id), count(m.seq) FILTER (WHERE m.role = 'user')
		FROM conversation_threads t LEFT JOIN messages m ON m.conversation_id = t.conversation_id
		WHERE t.channel_id = $1`, channelID).Scan(&f.Threads, &f.UserTurns)
	if err != nil {
		return f, err
	}
	var lastRescued, rescuedAt *time.Time
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE j.metadata ? 'rescued_from'), count(*) FILTER (WHERE j.attempt > 1),
			max(o.created_at) FILTER (WHERE j.metadata ? 'rescued_from'),
			min((j.errors[1]->>'at')::timestamptz) FILTER (WHERE j.metadata ? 'rescued_from')
		FROM river_job j LEFT JOIN channel_messages o ON o.reply_to = (j.args->>'message_id')::uuid
		WHERE j.kind = 'channel_reply'`).Scan(&f.JobsRescued, &f.JobsRerun, &lastRescued, &rescuedAt)
	if lastRescued != nil {
		f.LastRescuedAt = *lastRescued
	}
	if rescuedAt != nil {
		f.RescuedAt = *rescuedAt
	}
	return f, err
}

// waits samples what the database's active sessions wait on, every interval until ctx ends:
// a count per wait event and query (sqlc's "-- name:"), the evidence of a hot row or a
// short pool. The result arrives on the returned channel.
func sampleWaits(ctx context.Context, databaseURL string, every time.Duration) <-chan map[string]int {
	out := make(chan map[string]int, 1)
	go func() {
		counts := map[string]int{}
		defer func() { out <- counts }()
		pool, err := pgxpool.New(context.WithoutCancel(ctx), databaseURL)
		if err != nil {
			return
		}
		defer pool.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rows, err := pool.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'running'),
					coalesce(substring(query from '-- name: (\w+)'), left(regexp_replace(query, '\s+', ' ', 'g'), 40))
				FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()`)
			if err != nil {
				continue
			}
			for rows.Next() {
				var wait, query string
				if rows.Scan(&wait, &query) == nil {
					counts[wait+" "+query]++
				}
			}
			rows.Close()
			counts[""]++ // samples taken
		}
	}()
	return out
}

// transactions is the number of transactions the database has committed or rolled back.
func transactions(ctx context.Context, databaseURL string) int64 {
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return 0
	}
	defer pool.Close()
	var n int64
	_ = pool.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n)
	return n
}
