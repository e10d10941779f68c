package campaigns_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"switchboard/access"
	"switchboard/campaigns"
	"switchboard/compliance"
	"switchboard/contacts"
	"switchboard/phonenumbers"
	"switchboard/sms"
	"switchboard/sms/smstest"
	"switchboard/store"
	"switchboard/store/storetest"
)

// world is a workspace ready to run campaigns, over its own database: an agent with an sms
// deployment, the SMS provider faked at the wire behind the real adapter, and a clock the
// test moves. The job client only inserts: the tests work the ticks themselves (tick).
type world struct {
	svc          *campaigns.Service
	store        *store.Store
	sms          *smstest.Server
	provider     *sms.Provider
	contacts     *contacts.Service
	clock        *clock
	ws           uuid.UUID
	agentID      uuid.UUID
	deploymentID uuid.UUID
	log          *slog.Logger
	calls        campaigns.Caller // a voice campaign's caller (voice_test.go); nil: none
}

// clock is the campaigns' clock, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const period = time.Minute

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	fake := smstest.New(t)
	provider, err := sms.New(sms.Config{AccountSID: smstest.AccountSID, AuthToken: smstest.AuthToken, BaseURL: fake.URL})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(ctx, "acme", 5_000_000_000)
	require.NoError(t, err)
	var a store.Agent
	require.NoError(t, st.InTx(ctx, func(tx *store.Tx) error {
		a, _, err = tx.CreateAgent(ctx, ws.ID, "Outbound agent", json.RawMessage(`{}`), nil)
		return err
	}))
	d, err := st.DeployAgent(ctx, ws.ID, store.Deploy{AgentID: a.ID, ChannelType: "sms", Config: json.RawMessage(`{}`)})
	require.NoError(t, err)
	w := &world{store: st, sms: fake, provider: provider, contacts: contacts.New(st), clock: &clock{t: time.Date(2026, 11, 23, 15, 0, 0, 0, time.UTC)},
		ws: ws.ID, agentID: a.ID, deploymentID: d.ID, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w.svc = w.process(t, st)
	return w
}

// process is the campaigns service of one process over st.
func (w *world) process(t *testing.T, st *store.Store) *campaigns.Service {
	t.Helper()
	comp, err := compliance.New(st, compliance.DefaultVersion)
	require.NoError(t, err)
	jobs, err := river.NewClient(riverpgxv5.New(st.Pool()), &river.Config{Logger: w.log})
	require.NoError(t, err)
	return campaigns.New(st, comp, w.provider, jobs, campaigns.Config{Period: period, Now: w.clock.Now, Calls: w.calls})
}

// replica is the campaigns service of another process on the same database, with its own
// connection pool.
func (w *world) replica(t *testing.T) *campaigns.Service {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), w.store.Pool().Config().ConnString())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return w.process(t, store.New(pool))
}

// accept records an owner's acceptance of version.
func (w *world) accept(t *testing.T, version string) {
	t.Helper()
	ctx := context.Background()
	sum := sha256.Sum256([]byte(uuid.NewString()))
	u, err := w.store.CreateUser(ctx, w.ws, "owner-"+version+"@example.com", "owner", sum[:], time.Now().Add(time.Hour))
	require.NoError(t, err)
	_, err = w.store.AcceptCompliance(ctx, w.ws, version, u.ID, u.Email, "owner")
	require.NoError(t, err)
}

// buyNumber buys the workspace a number at the fake provider.
func (w *world) buyNumber(t *testing.T, e164 string) {
	t.Helper()
	credits := phonenumbers.Prices["US"]
	_, err := phonenumbers.New(w.store, w.provider, w.log).Buy(context.Background(), w.ws,
		phonenumbers.BuyInput{PhoneNumber: e164, Country: "US", ConfirmPrice: &credits})
	require.NoError(t, err)
}

// ready accepts the compliance text and buys a number: campaigns may start.
func (w *world) ready(t *testing.T) {
	t.Helper()
	w.accept(t, compliance.DefaultVersion)
	w.buyNumber(t, "+14155550100")
}

func (w *world) contact(t *testing.T, in contacts.Input) contacts.Contact {
	t.Helper()
	c, err := w.contacts.Create(context.Background(), w.ws, in)
	require.NoError(t, err)
	return c
}

// launch creates a campaign that starts at once.
func (w *world) launch(t *testing.T, name, message string, aud campaigns.Audience, sched campaigns.Schedule) campaigns.Campaign {
	t.Helper()
	c, err := w.svc.Create(context.Background(), w.ws, access.Admin, campaigns.Input{Name: &name, AgentID: &w.agentID, DeploymentID: &w.deploymentID,
		FirstMessage: &message, Audience: &aud, Schedule: &sched})
	require.NoError(t, err)
	return c
}

func (w *world) get(t *testing.T, id uuid.UUID) campaigns.Campaign {
	t.Helper()
	c, err := w.svc.Get(context.Background(), w.ws, id)
	require.NoError(t, err)
	return c
}

// tick works one sending job of the campaign on svc, as River would, and returns how long
// it snoozes (0: the job ended).
func (w *world) tick(t *testing.T, svc *campaigns.Service, id uuid.UUID) time.Duration {
	t.Helper()
	err := campaigns.NewWorker(svc, w.log).Work(context.Background(),
		&river.Job[campaigns.TickArgs]{Args: campaigns.TickArgs{WorkspaceID: w.ws, CampaignID: id}})
	var snooze *rivertype.JobSnoozeError
	if errors.As(err, &snooze) {
		return snooze.Duration
	}
	require.NoError(t, err)
	return 0
}

// decisions are the campaign's sends as status:reason, by contact.
func (w *world) decisions(t *testing.T, id uuid.UUID) map[uuid.UUID]string {
	t.Helper()
	sends, err := w.store.CampaignSends(context.Background(), w.ws, id)
	require.NoError(t, err)
	out := map[uuid.UUID]string{}
	for _, s := range sends {
		reason := ""
		if s.Reason != nil {
			reason = *s.Reason
		}
		out[s.ContactID] = s.Status + ":" + reason
	}
	return out
}

// ticks queued for the campaign.
func (w *world) ticks(t *testing.T, id uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, w.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = 'campaign_tick' AND args->>'campaign_id' = $1`, id.String()).Scan(&n))
	return n
}

func (w *world) balance(t *testing.T) int64 {
	t.Helper()
	ws, err := w.store.WorkspaceByID(context.Background(), w.ws)
	require.NoError(t, err)
	return ws.BalanceNanoUSD
}

func ptr[T any](v T) *T { return &v }
