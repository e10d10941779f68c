package channels

import (
	"context"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"switchboard/blueprint"
	"switchboard/store"
)

// A Provider carries one channel type's traffic end to end: it checks a channel's settings
// and decides its status, tells its carrier or app where to call once it is connected, and
// answers every request made to the channel's inbound URL. The channel layer does the rest
// that all channels share: the resource, sealed credentials, the token in the URL, and the
// per-channel lookup before a provider sees a request.
//
// SMS is built in; voice and the messaging apps register theirs with Service.Register.
type Provider interface {
	// Prepare checks the channel's settings (cfg holds the plain values and the opened
	// credentials; it may normalize them), sets w.Address when the channel has one, and
	// decides the status. A bad setting is a 400 naming config.<key>.
	Prepare(ctx context.Context, ws uuid.UUID, w *store.ChannelWrite, cfg *Config) (Status, error)
	// Connected runs after a channel was created or changed: pointing the provider at the
	// inbound URL (a number's webhook, a bot's registration). Best effort: a failure is logged
	// and the README says where to paste the URL by hand.
	Connected(ctx context.Context, c store.Channel, cfg *Config)
	// Hook answers a request to the channel's inbound URL. It verifies the provider's
	// signature (over req.URL or req.Body) before it reads anything else; a bad one is
	// ErrSignature (403, nothing stored).
	Hook(ctx context.Context, c store.Channel, cfg *Config, req Request) (Answer, error)
}

// Request is a provider's request to /hooks/{provider}/{token}[/{sub}].
type Request struct {
	Method string
	// Sub is what follows the token in the path ("" for the inbound URL itself, "status"
	// for SMS delivery reports, a provider's own sub-routes).
	Sub string
	// URL is the public URL the provider called (PUBLIC_BASE_URL, the path and the query), set
	// by Receive. Signatures computed over the URL (the carrier's) are checked against it.
	URL string
	// RawQuery is the query as sent (URL ends with it, unchanged, since signatures cover it).
	RawQuery string
	Query    url.Values
	Header   http.Header
	Body     []byte
}

// Answer is what the provider gets back (status 200 when Status is 0).
type Answer struct {
	Status      int
	ContentType string
	Body        string
}

// Status is a channel's verdict: connected, or what it needs (Setup).
type Status struct {
	Connected bool
	Setup     string
}

// NeedsSetup is the status of a channel that cannot carry traffic yet, saying why.
func NeedsSetup(why string) Status { return Status{Setup: why} }

// Register makes the channel layer carry a channel type's traffic through p.
func (s *Service) Register(t blueprint.ChannelType, p Provider) { s.providers[string(t)] = p }

// provider is the Provider of a channel type, if this server carries it.
func (s *Service) provider(t string) (Provider, bool) {
	p, ok := s.providers[t]
	return p, ok
}

// OpenConfig is a stored channel's config with its credentials opened, for its provider.
func (s *Service) OpenConfig(c store.Channel) (*Config, error) {
	cfg := newConfig()
	if err := s.loadConfig(cfg, &store.ChannelWrite{ID: c.ID}, &c); err != nil {
		return nil, err
	}
	return cfg, nil
}

// connected finishes Create and Update: the channel's provider is told where to call.
func (s *Service) connected(ctx context.Context, c store.Channel) {
	p, ok := s.provider(c.Provider)
	if !ok || c.Status != store.ChannelConnected {
		return
	}
	cfg, err := s.OpenConfig(c)
	if err != nil {
		s.log.WarnContext(ctx, "opening a channel's config", "channel", c.ID.String(), "error", err.Error())
		return
	}
	p.Connected(ctx, c, cfg)
}
