// Package channels connects the channels agents answer on and carries their traffic: the
// /api/channels resource (connect, change, delete; credentials sealed with SECRETS_KEY), the
// signed inbound webhooks at PUBLIC_BASE_URL/hooks/{provider}/{token}, and the durable jobs
// that answer what arrives through the deployed-agent runtime and deliver the reply.
//
// SMS is carried end to end here (sms.go, reply.go), the messaging apps by package msgapps
// through the same seam (Provider, Sender); webchat needs no channel row to work (the widget
// is reached through its deployment); telco_voice is stored and stays `needs_setup` until
// this server carries its traffic, so that deploy_agent never claims traffic that cannot
// arrive.
package channels

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/blueprint"
	"switchboard/converse"
	"switchboard/sms"
	"switchboard/store"
)

// Service is the channel layer.
type Service struct {
	store     *store.Store
	carrier   *sms.Provider
	agents    *converse.Service
	jobs      *river.Client[pgx.Tx]
	publicURL string
	log       *slog.Logger
	providers map[string]Provider
	finishes  batcher[finishing]      // the records of the carrier's answers, committed in batches
	reported  batcher[store.Delivery] // the delivery reports, committed in batches
	// hooks is the store the carriers' and apps' webhooks use (UseHookStores): a pool of
	// their own, so that a webhook never waits for a connection behind reply jobs; reports
	// is the delivery reports' writes' (reportDelivery), apart again, so that reports
	// waiting on the WAL never make an inbound message wait for a connection.
	hooks, reports *store.Store
	// inbox carries the messages this replica stored to RunInbox, which inserts their jobs.
	inbox chan uuid.UUID
}

// New returns the channel layer. publicURL is PUBLIC_BASE_URL (without a trailing slash):
// inbound URLs are built on it and the carrier's signatures are checked against them.
func New(st *store.Store, carrier *sms.Provider, agents *converse.Service, jobs *river.Client[pgx.Tx], publicURL string, log *slog.Logger) *Service {
	s := &Service{store: st, hooks: st, reports: st, inbox: make(chan uuid.UUID, 4*inboxBatch), carrier: carrier, agents: agents, jobs: jobs, publicURL: strings.TrimSuffix(publicURL, "/"), log: log,
		providers: map[string]Provider{}}
	s.Register(blueprint.ChannelSMS, smsProvider{s: s})
	return s
}

// UseHookStores has the webhooks use the same database over pools of their own instead of
// the pool the reply jobs share, so that hundreds of replies in flight never make a
// carrier's webhook wait for a connection: the webhooks read their channel and store inbound
// messages on inbound; delivery reports are written on reports. Reports are as many a second
// as replies, each waiting on the WAL; sharing a pool, a burst of them held every connection
// while inbound messages waited (docs/benchmarks.md, "Two-way SMS under load", 2026-12-02).
func (s *Service) UseHookStores(inbound, reports *store.Store) { s.hooks, s.reports = inbound, reports }

// View is a channel as /api answers it.
type View struct {
	ID             uuid.UUID       `json:"id"`
	Object         string          `json:"object"`
	Provider       string          `json:"provider"`
	Name           string          `json:"name"`
	Status         string          `json:"status"`
	Setup          *string         `json:"setup"`
	InboundURL     *string         `json:"inbound_url"`
	Address        *string         `json:"address"`
	Config         json.RawMessage `json:"config"`
	InboundAgentID *uuid.UUID      `json:"inbound_agent_id"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedAt      time.Time       `json:"updated_at"`
	LastInboundAt  *time.Time      `json:"last_inbound_at"`
}

// Deleted is the answer to a deletion.
type Deleted struct {
	ID      uuid.UUID `json:"id"`
	Object  string    `json:"object"`
	Deleted bool      `json:"deleted"`
}

// Input is what POST and PATCH /api/channels give; nil fields are left as they are (PATCH).
type Input struct {
	Provider blueprint.ChannelType
	Name     *string
	Config   map[string]json.RawMessage
}

func (s *Service) view(c store.Channel) View {
	v := View{ID: c.ID, Object: "channel", Provider: c.Provider, Name: c.Name, Status: c.Status, Setup: c.Setup, Address: c.Address,
		Config: c.Config, InboundAgentID: c.InboundAgent, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, LastInboundAt: c.LastInbound}
	if c.Provider != string(blueprint.ChannelWebchat) {
		u := s.InboundURL(c)
		v.InboundURL = &u
	}
	if len(v.Config) == 0 {
		v.Config = json.RawMessage(`{}`)
	}
	return v
}

// InboundURL is where the channel's provider sends its traffic.
func (s *Service) InboundURL(c store.Channel) string {
	return s.publicURL + "/hooks/" + c.Provider + "/" + c.InboundToken
}

// statusURL is where the carrier reports what became of a message the channel sent.
func (s *Service) statusURL(c store.Channel) string { return s.InboundURL(c) + "/status" }

// Create connects a channel.
func (s *Service) Create(ctx context.Context, ws uuid.UUID, in Input) (View, error) {
	if !slices.Contains(blueprint.ChannelTypes(), in.Provider) {
		return View{}, apierr.Invalid("provider", "invalid_value", "provider must be one of %s.", strings.Join(blueprint.Strings(blueprint.ChannelTypes()), ", "))
	}
	if in.Name == nil {
		return View{}, apierr.Invalid("name", "missing_parameter", "name is required: 1 to 100 characters.")
	}
	w := store.ChannelWrite{ID: store.NewChannelID(), Provider: string(in.Provider), InboundToken: newToken()}
	if err := s.prepare(ctx, ws, &w, in, nil); err != nil {
		return View{}, err
	}
	var c store.Channel
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if c, err = tx.CreateChannel(ctx, ws, w); err != nil {
			return err
		}
		return audit.Record(ctx, tx, ws, audit.ChannelConnected, "channel", c.ID.String(), map[string]any{"name": c.Name, "provider": c.Provider, "status": c.Status})
	})
	if errors.Is(err, store.ErrExists) {
		return View{}, numberTaken(w.Address)
	}
	if err != nil {
		return View{}, err
	}
	s.connected(ctx, c)
	return s.view(c), nil
}

// Update renames a channel or changes its settings, and decides its status again.
func (s *Service) Update(ctx context.Context, ws, id uuid.UUID, in Input) (View, error) {
	cur, err := s.store.ChannelByID(ctx, ws, id)
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	in.Provider = blueprint.ChannelType(cur.Provider)
	if in.Name == nil {
		in.Name = &cur.Name
	}
	w := store.ChannelWrite{ID: cur.ID, Provider: cur.Provider, InboundToken: cur.InboundToken}
	if err := s.prepare(ctx, ws, &w, in, &cur); err != nil {
		return View{}, err
	}
	c, err := s.store.UpdateChannel(ctx, ws, w)
	if errors.Is(err, store.ErrExists) {
		return View{}, numberTaken(w.Address)
	}
	if err != nil {
		return View{}, err
	}
	s.connected(ctx, c)
	return s.view(c), nil
}

// Get returns one channel of the workspace.
func (s *Service) Get(ctx context.Context, ws, id uuid.UUID) (View, error) {
	c, err := s.store.ChannelByID(ctx, ws, id)
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	return s.view(c), nil
}

// List lists the workspace's channels, of one provider when it is not empty.
func (s *Service) List(ctx context.Context, ws uuid.UUID, provider string) ([]View, error) {
	list, err := s.store.ListChannels(ctx, ws, provider)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list))
	for _, c := range list {
		out = append(out, s.view(c))
	}
	return out, nil
}

// Delete removes a channel and its deployments, as delete_channels does.
//
// The delete locks the channel, then its threads and messages (its cascades); a reply's job
// moves its inbound message first, then writes the reply, whose reference takes the channel's
// KEY SHARE. No lock is added on the replies' hot path for this rare order: PostgreSQL aborts
// one of the two (a reply's job is retried) and the delete runs again.
func (s *Service) Delete(ctx context.Context, ws, id uuid.UUID) (Deleted, error) {
	err := store.AgainIfDeadlocked(deleteAttempts, func() error { return s.store.DeleteChannel(ctx, ws, id) })
	if err != nil {
		return Deleted{}, apierr.WithParam(err, "id")
	}
	return Deleted{ID: id, Object: "channel.deleted", Deleted: true}, nil
}

// deleteAttempts bounds the runs of a channel's delete that PostgreSQL aborts to break a
// deadlock.
const deleteAttempts = 3

// prepare checks the input and fills in what is stored: name, config (credentials sealed),
// address and status. cur is the stored channel on an update.
func (s *Service) prepare(ctx context.Context, ws uuid.UUID, w *store.ChannelWrite, in Input, cur *store.Channel) error {
	if n := utf8.RuneCountInString(*in.Name); n < 1 || n > 100 || strings.TrimSpace(*in.Name) == "" {
		return apierr.Invalid("name", "invalid_value", "name must be 1 to 100 characters.")
	}
	w.Name = strings.TrimSpace(*in.Name)
	cfg, err := s.mergeConfig(w, in.Config, cur)
	if err != nil {
		return err
	}
	st := Status{Connected: true}
	if p, ok := s.provider(string(in.Provider)); ok {
		if st, err = p.Prepare(ctx, ws, w, cfg); err != nil {
			return err
		}
	} else if in.Provider != blueprint.ChannelWebchat {
		st = NeedsSetup("This server does not carry " + string(in.Provider) + " traffic yet: the channel is stored, and agents cannot be deployed on it until it does.")
	}
	raw, err := cfg.public()
	if err != nil {
		return err
	}
	w.Config, w.Status, w.Setup = raw, store.ChannelConnected, nil
	if !st.Connected {
		w.Status, w.Setup = store.ChannelNeedsSetup, &st.Setup
	}
	return nil
}

func numberTaken(address *string) error {
	n := ""
	if address != nil {
		n = *address
	}
	return apierr.Conflict("number_taken", "The number %s is already connected as a channel, here or in another workspace.", n)
}

// newToken is an inbound URL's secret: 32 random bytes, hex.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StatusCallbackURL builds, for PUBLIC_BASE_URL, the delivery status callback URL of a
// channel's messages (campaigns send through the channel too).
func StatusCallbackURL(publicURL string) func(store.Channel) string {
	s := &Service{publicURL: strings.TrimSuffix(publicURL, "/")}
	return s.statusURL
}

// ErrSignature is the answer to a request whose signature does not verify: 403, nothing
// stored.
var ErrSignature = &apierr.Error{Kind: apierr.KindPermission, Code: "invalid_signature",
	Message: "The request's signature does not verify against this channel's inbound URL."}

// Receive takes a request to /hooks/{provider}/{token}[/{sub}]: the token finds the channel,
// and the channel type's provider verifies the request and answers it.
func (s *Service) Receive(ctx context.Context, provider, token string, req Request) (Answer, error) {
	c, err := s.hooks.ChannelByToken(ctx, provider, token)
	if errors.Is(err, store.ErrNotFound) {
		return Answer{}, apierr.NotFound("", "channel_not_found", "No channel has this inbound URL.")
	}
	if err != nil {
		return Answer{}, err
	}
	p, ok := s.provider(provider)
	if !ok {
		return Answer{}, apierr.NotFound("", "channel_not_found", "This server does not carry %s traffic yet.", provider)
	}
	cfg, err := s.OpenConfig(c)
	if err != nil {
		return Answer{}, err
	}
	req.URL = s.InboundURL(c)
	if req.Sub != "" {
		req.URL += "/" + req.Sub
	}
	if req.RawQuery != "" {
		req.URL += "?" + req.RawQuery
	}
	return p.Hook(ctx, c, cfg, req)
}
