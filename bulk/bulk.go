// Package bulk holds the six bulk tools: delete_conversations, delete_channels,
// delete_contacts, delete_campaigns, undeploy_agents and cancel_campaigns. Each takes a
// `filter` (the tool's keys, or `all: true`) or an explicit `ids` list and answers
// `{success, requested, affected, skipped?, sample}`; they are registered as management
// operations (manage.Service.Register), so the MCP server and the builder assistant offer
// them like the agent tools.
//
// A destructive tool parks one confirmation (its summary states the count and names up to
// five items), with the count it matched. `{all: true}` needs `confirm_count` equal to the
// current count. When the user confirms, the set is counted again: grown by more than 10%,
// the action resolves as `aborted_drift` and nothing is touched. cancel_campaigns runs at
// once.
//
// Every bulk action runs as one durable job (BulkArgs) in bounded batches, one short
// transaction of at most BatchSize rows each, so a 100,000-row delete neither holds a request
// open nor locks a table for long. Only rows created before the action started (its cutoff)
// are touched. The caller waits up to Wait for the job, and is answered with the final counts,
// or, for a longer run, with `status: "running"` and the `run_id` that get_bulk_run reports on.
package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/access"
	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/manage"
	"switchboard/shortid"
	"switchboard/store"
)

// Defaults of Service.
const (
	DefaultBatchSize = 1000
	DefaultWait      = 20 * time.Second
	// MaxIDs bounds an explicit ids list.
	MaxIDs = 1000
	// DriftPercent: a parked action is aborted when its set grew by more than this.
	DriftPercent = 10
	runPrefix    = "bulk_"
)

// Service runs the bulk tools.
type Service struct {
	store *store.Store
	jobs  *river.Client[pgx.Tx] // nil: runs work in the request (tests of one package)
	log   *slog.Logger
	// BatchSize is the most rows one batch transaction touches.
	BatchSize int
	// Wait is how long a call waits for its job before answering `running`.
	Wait time.Duration
	now  func() time.Time
}

// New returns the service; jobs is the (insert-only) River client enqueueing the runs.
func New(st *store.Store, jobs *river.Client[pgx.Tx], log *slog.Logger) *Service {
	return &Service{store: st, jobs: jobs, log: log, BatchSize: DefaultBatchSize, Wait: DefaultWait, now: time.Now}
}

// Result is what every bulk tool answers.
type Result struct {
	Success   bool             `json:"success"`
	Requested int              `json:"requested"`
	Affected  int              `json:"affected"`
	Skipped   []Skip           `json:"skipped,omitempty"`
	Sample    []store.BulkItem `json:"sample"`
	// Status is `completed`, `running` (the job goes on: ask get_bulk_run with RunID) or
	// `failed`.
	Status string `json:"status"`
	RunID  string `json:"run_id,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Skip is an item (or, without id, a number of them) left alone, and why.
type Skip struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name,omitempty"`
	Count  int    `json:"count,omitempty"`
	Reason string `json:"reason"`
}

// kind is one bulk tool's set: how to count, sample and change it, a batch at a time.
type kind struct {
	tool        string
	description string
	verb, nouns string          // "Delete", "conversations"
	schema      json.RawMessage // the JSON Schema of the tool's input type
	decode      func(raw json.RawMessage) (input, error)
	destructive bool
	count       func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) (int, error)
	sample      func(ctx context.Context, st *store.Store, ws uuid.UUID, set store.BulkSet) ([]store.BulkItem, error)
	apply       func(ctx context.Context, tx *store.Tx, ws uuid.UUID, set store.BulkSet, limit int) (int, error)
	// skipped lists what the set leaves out and why (running campaigns); may be nil.
	skipped func(ctx context.Context, st *store.Store, ws uuid.UUID, in input) ([]Skip, error)
}

// input is a bulk call decoded: the set it names and its confirmation fields.
type input struct {
	set          store.BulkSet
	all          bool
	confirmCount *int
	describe     string // the filter in words, for the summary
	requested    int    // the number of distinct ids of an ids call
	parked       *Parked
	raw          json.RawMessage
	// includeRunning: delete_campaigns may delete running campaigns.
	includeRunning bool
}

// Parked is what a parked call recorded: the count it matched.
type Parked struct {
	Count int `json:"count"`
}

// Operations are the bulk tools and get_bulk_run, as management operations.
func (s *Service) Operations() []manage.Operation {
	var ops []manage.Operation
	for _, k := range s.kinds() {
		ops = append(ops, s.operation(k))
	}
	return append(ops, manage.NewOperation("get_bulk_run", "Report on a bulk action that was still running when its tool answered (status `running`): its counts so far, or its final result.",
		agent.Safe, access.Bulk, s.GetRun))
}

// kinds are the bulk tools (those of contacts and campaigns in kinds_campaigns.go).
func (s *Service) kinds() []kind {
	return append([]kind{conversationsKind(), channelsKind(), deploymentsKind()}, moreKinds()...)
}

// operation registers a kind: its typed input gives the schema; the call decodes it into an
// input (decode), then prepares, rechecks or runs it.
func (s *Service) operation(k kind) manage.Operation {
	o := manage.Operation{Name: k.tool, Description: k.description, Schema: k.schema, Class: agent.Change, Permission: access.Bulk}
	if k.destructive {
		o.Class, o.ParksOnMCP = agent.Risky, true
		o.Prepare = func(ctx context.Context, c agent.Call) (agent.Prepared, error) { return s.prepare(ctx, k, c) }
		o.Recheck = func(ctx context.Context, c agent.Call) (string, string, error) { return s.recheck(ctx, k, c) }
	}
	o.Run = func(ctx context.Context, ws uuid.UUID, args json.RawMessage) (any, error) {
		return s.run(ctx, k, agent.Call{WorkspaceID: ws, Arguments: args})
	}
	o.RunCall = func(ctx context.Context, c agent.Call) (any, error) { return s.run(ctx, k, c) }
	return o
}

// prepare checks a destructive call before it parks: the set must be named, `all` must come
// with the right confirm_count, and an empty set answers at once (nothing to confirm). The
// parked arguments carry the count, for the drift check.
func (s *Service) prepare(ctx context.Context, k kind, c agent.Call) (agent.Prepared, error) {
	in, err := decode(k, c.Arguments)
	if err != nil {
		return agent.Prepared{}, err
	}
	in.set.Cutoff = s.now()
	n, err := k.count(ctx, s.store, c.WorkspaceID, in.set)
	if err != nil {
		return agent.Prepared{}, err
	}
	if err := checkConfirmCount(in, n, k); err != nil {
		return agent.Prepared{}, err
	}
	sample, err := k.sample(ctx, s.store, c.WorkspaceID, in.set)
	if err != nil {
		return agent.Prepared{}, err
	}
	var skipped []Skip
	if k.skipped != nil {
		if skipped, err = k.skipped(ctx, s.store, c.WorkspaceID, in); err != nil {
			return agent.Prepared{}, err
		}
	}
	if n == 0 {
		return agent.Prepared{Result: Result{Success: true, Requested: in.requestedOr(0), Skipped: notFound(in, 0, skipped),
			Sample: []store.BulkItem{}, Status: "completed"}}, nil
	}
	args, err := withParked(in.raw, Parked{Count: n})
	if err != nil {
		return agent.Prepared{}, err
	}
	return agent.Prepared{Summary: summary(k, in, n, sample, skipped), Arguments: args,
		Details: map[string]any{"requested": in.requestedOr(n + len(skippedItems(skipped))), "affected": 0, "sample": sample, "skipped": notFound(in, n, skipped)}}, nil
}

// checkConfirmCount: `{all: true}` needs confirm_count equal to the count; any
// confirm_count given must match.
func checkConfirmCount(in input, n int, k kind) error {
	switch {
	case in.confirmCount == nil && in.all:
		return apierr.Invalid("confirm_count", "confirm_count_required",
			"A filter of {all: true} needs confirm_count equal to the current count: %s now. Call again with confirm_count: %d.", matching(k, n), n)
	case in.confirmCount != nil && *in.confirmCount != n:
		return apierr.Invalid("confirm_count", "confirm_count_mismatch",
			"confirm_count is %d, but %s now; nothing was done. Call again with confirm_count: %d if that is what you mean.", *in.confirmCount, matching(k, n), n)
	}
	return nil
}

// recheck counts a confirmed action's set again: grown by more than DriftPercent since it
// was parked, the action is aborted.
func (s *Service) recheck(ctx context.Context, k kind, c agent.Call) (string, string, error) {
	in, err := decode(k, c.Arguments)
	if err != nil || in.parked == nil {
		return "", "", err
	}
	in.set.Cutoff = s.now()
	if c.ConversationID != uuid.Nil && k.tool == "delete_conversations" {
		in.set.ExcludeID = &c.ConversationID
	}
	n, err := k.count(ctx, s.store, c.WorkspaceID, in.set)
	if err != nil {
		return "", "", err
	}
	if drifted(in.parked.Count, n) {
		return store.ActionAbortedDrift, fmt.Sprintf("%d %s matched when it was asked and %d match now, more than %d%% more; nothing was %s. Ask again to act on the new set.",
			in.parked.Count, nounFor(k, in.parked.Count), n, DriftPercent, pastTense(k.verb)), nil
	}
	return "", "", nil
}

// drifted reports whether now exceeds parked by more than DriftPercent.
func drifted(parked, now int) bool {
	return (now-parked)*100 > parked*DriftPercent
}

// run acts on the set now: the job is enqueued with the run's record, and the call waits for
// it (up to Wait).
func (s *Service) run(ctx context.Context, k kind, c agent.Call) (Result, error) {
	in, err := decode(k, c.Arguments)
	if err != nil {
		return Result{}, err
	}
	in.set.Cutoff = s.now()
	var skipped []Skip
	if c.ConversationID != uuid.Nil && k.tool == "delete_conversations" {
		// The conversation the action was confirmed in stays: its turn is being written.
		in.set.ExcludeID = &c.ConversationID
		if in.excludes(ctx, s, k, c.WorkspaceID) {
			conv, err := s.store.ConversationByRef(ctx, c.WorkspaceID, c.ConversationID.String())
			if err != nil {
				return Result{}, err
			}
			skipped = append(skipped, Skip{ID: conv.ShortID, Name: conv.ShortID, Reason: "current_conversation"})
		}
	}
	if !k.destructive && (in.all || in.confirmCount != nil) {
		n, err := k.count(ctx, s.store, c.WorkspaceID, in.set)
		if err != nil {
			return Result{}, err
		}
		if err := checkConfirmCount(in, n, k); err != nil {
			return Result{}, err
		}
	}
	n, err := k.count(ctx, s.store, c.WorkspaceID, in.set)
	if err != nil {
		return Result{}, err
	}
	sample, err := k.sample(ctx, s.store, c.WorkspaceID, in.set)
	if err != nil {
		return Result{}, err
	}
	if k.skipped != nil {
		more, err := k.skipped(ctx, s.store, c.WorkspaceID, in)
		if err != nil {
			return Result{}, err
		}
		skipped = append(skipped, more...)
	}
	skipped = notFound(in, n, skipped)
	res := Result{Success: true, Requested: in.requestedOr(n + len(skippedItems(skipped))), Skipped: skipped, Sample: sample, Status: "completed"}
	if n == 0 {
		return res, nil
	}
	spec, err := json.Marshal(runSpec{Tool: k.tool, Arguments: in.raw, Cutoff: in.set.Cutoff, Exclude: in.set.ExcludeID, OlderThan: in.set.OlderThan})
	if err != nil {
		return Result{}, err
	}
	sampleJSON, _ := json.Marshal(sample)
	skippedJSON, _ := json.Marshal(orEmpty(skipped))
	r := store.BulkRun{ID: uuid.New(), ShortID: shortid.New(runPrefix), Tool: k.tool, Spec: spec, Requested: res.Requested,
		Sample: sampleJSON, Skipped: skippedJSON}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.CreateBulkRun(ctx, c.WorkspaceID, r); err != nil {
			return err
		}
		if err := audit.Record(ctx, tx, c.WorkspaceID, audit.BulkToolRun, "bulk_run", r.ShortID,
			map[string]any{"tool": r.Tool, "requested": r.Requested, "arguments": in.raw}); err != nil {
			return err
		}
		if s.jobs == nil {
			return nil
		}
		_, err := s.jobs.InsertTx(ctx, tx.Pgx(), BulkArgs{WorkspaceID: c.WorkspaceID, RunID: r.ID}, nil)
		return err
	})
	if err != nil {
		return Result{}, err
	}
	if s.jobs == nil {
		if err := s.work(ctx, c.WorkspaceID, r.ID, true); err != nil {
			return Result{}, err
		}
	}
	return s.await(ctx, c.WorkspaceID, r.ID)
}

// excludes reports whether the set's exclusion leaves out a row it would hold (the
// conversation a confirmation was given in), so that the answer can say so.
func (in input) excludes(ctx context.Context, s *Service, k kind, ws uuid.UUID) bool {
	probe := in.set
	probe.ExcludeID = nil
	with, err := k.count(ctx, s.store, ws, probe)
	if err != nil {
		return false
	}
	without, err := k.count(ctx, s.store, ws, in.set)
	return err == nil && with > without
}

// await waits for a run to finish, up to Wait, and reports it.
func (s *Service) await(ctx context.Context, ws, id uuid.UUID) (Result, error) {
	deadline := time.Now().Add(s.Wait)
	pause := 20 * time.Millisecond
	for {
		r, err := s.store.BulkRunByID(ctx, ws, id)
		if err != nil {
			return Result{}, err
		}
		if r.Status != "running" || !time.Now().Before(deadline) {
			return report(r), nil
		}
		select {
		case <-ctx.Done():
			// The job goes on; the caller is gone or out of time.
			return report(r), nil
		case <-time.After(pause):
		}
		pause = min(pause*2, 500*time.Millisecond)
	}
}

func report(r store.BulkRun) Result {
	res := Result{Success: r.Status != "failed", Requested: r.Requested, Affected: r.Affected, Status: r.Status, Error: r.Error}
	_ = json.Unmarshal(r.Sample, &res.Sample)
	_ = json.Unmarshal(r.Skipped, &res.Skipped)
	if res.Sample == nil {
		res.Sample = []store.BulkItem{}
	}
	if r.Status == "running" {
		res.RunID = r.ShortID
	}
	return res
}

// GetRunInput names a bulk run.
type GetRunInput struct {
	RunID string `json:"run_id" jsonschema:"description=The run_id a bulk tool answered with (bulk_...)."`
}

// GetRun reports a bulk run.
func (s *Service) GetRun(ctx context.Context, ws uuid.UUID, in GetRunInput) (Result, error) {
	r, err := s.store.BulkRunByShortID(ctx, ws, in.RunID)
	if err != nil {
		return Result{}, apierr.WithParam(err, "run_id")
	}
	res := report(r)
	res.RunID = r.ShortID
	return res, nil
}

// notFound adds to skipped the ids of an ids call that matched nothing (unknown, or not in
// the set), as one entry with their number.
func notFound(in input, matched int, skipped []Skip) []Skip {
	if !in.set.ByIDs {
		return skipped
	}
	missing := in.requested - matched - len(skippedItems(skipped))
	if missing > 0 {
		skipped = append(skipped, Skip{Count: missing, Reason: "not_found"})
	}
	return skipped
}

// skippedItems are the skips naming one item each.
func skippedItems(skipped []Skip) []Skip {
	var out []Skip
	for _, s := range skipped {
		if s.ID != "" {
			out = append(out, s)
		}
	}
	return out
}

func orEmpty(s []Skip) []Skip {
	if s == nil {
		return []Skip{}
	}
	return s
}

func (in input) requestedOr(n int) int {
	if in.set.ByIDs {
		return in.requested
	}
	return n
}

// summary is the sentence a destructive call parks with: the count, the filter and a sample.
func summary(k kind, in input, n int, sample []store.BulkItem, skipped []Skip) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %s (%s)", k.verb, n, nounFor(k, n), in.describe)
	if len(sample) > 0 {
		names := make([]string, len(sample))
		for i, it := range sample {
			names[i] = it.Name
		}
		more := ""
		if n > len(sample) {
			more = fmt.Sprintf(" and %d more", n-len(sample))
		}
		fmt.Fprintf(&b, ": %s%s", strings.Join(names, "; "), more)
	}
	if items := skippedItems(skipped); len(items) > 0 {
		fmt.Fprintf(&b, "; leaving alone %d (%s)", len(items), items[0].Reason)
	}
	return b.String()
}

// matching says how many items match: "1 campaign matches", "12 conversations match".
func matching(k kind, n int) string {
	if n == 1 {
		return "1 " + nounFor(k, n) + " matches"
	}
	return fmt.Sprintf("%d %s match", n, k.nouns)
}

func nounFor(k kind, n int) string {
	if n == 1 {
		return strings.TrimSuffix(k.nouns, "s")
	}
	return k.nouns
}

func pastTense(verb string) string {
	switch verb {
	case "Undeploy":
		return "undeployed"
	case "Cancel":
		return "cancelled"
	}
	return strings.ToLower(verb) + "d"
}

// withParked returns the arguments with the parked count added.
func withParked(raw json.RawMessage, p Parked) (json.RawMessage, error) {
	var m map[string]any
	if len(raw) == 0 || string(raw) == "null" {
		m = map[string]any{}
	} else if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["parked"] = p
	return json.Marshal(m)
}
