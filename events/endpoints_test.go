package events

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/netguard"
	"switchboard/store"
)

const publicHook = "https://93.184.216.34/hook" // a public address literal: no DNS in tests

type endpointsBundle struct {
	*hubBundle
	driver *riverpgxv5.Driver
	admin  store.Principal
}

// setupEndpoints builds the service over an insert-only River client (the redeliveries stay
// in river_job for the test to read) and the production SSRF policy.
func setupEndpoints(t *testing.T) (*Endpoints, *endpointsBundle) {
	t.Helper()
	_, b := setupHub(t)
	driver := riverpgxv5.New(b.store.Pool())
	jobs, err := river.NewClient(driver, &river.Config{})
	require.NoError(t, err)
	admin := store.Principal{Role: "admin", WorkspaceID: b.ws}
	return NewEndpoints(b.store, netguard.Guard{}, jobs), &endpointsBundle{hubBundle: b, driver: driver, admin: admin}
}

// requireAPIError checks the domain error's code and the field it names.
func requireAPIError(t *testing.T, err error, code, param string) {
	t.Helper()
	e := apierr.As(err)
	require.NotNil(t, e, "want %s, got %v", code, err)
	require.Equal(t, code, e.Code)
	require.Equal(t, param, e.Param)
}

func TestEventTypesNormalised(t *testing.T) {
	for name, tc := range map[string]struct{ in, want []string }{
		"kept in order":        {[]string{"b.x", "a.x"}, []string{"b.x", "a.x"}},
		"duplicates dropped":   {[]string{"a.x", "b.x", "a.x"}, []string{"a.x", "b.x"}},
		"star alone":           {[]string{"a.x", "*", "b.x"}, []string{"*"}},
		"empty stays empty":    {[]string{}, nil},
		"only star":            {[]string{"*", "*"}, []string{"*"}},
		"duplicates then star": {[]string{"a.x", "a.x", "*"}, []string{"*"}},
	} {
		t.Run(name, func(t *testing.T) { require.Equal(t, tc.want, EventTypes(tc.in)) })
	}
}

func TestEndpointCreate(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook})
	require.NoError(t, err)
	require.Equal(t, []string{"*"}, e.EventTypes, "no subscription is every event")
	require.Regexp(t, `^whsec_`, e.Secret)
	require.True(t, e.Enabled)

	e, err = s.Create(ctx, b.admin, NewEndpoint{URL: publicHook, EventTypes: []string{"turn.completed", "turn.completed", "spend.recorded"}})
	require.NoError(t, err)
	require.Equal(t, []string{"turn.completed", "spend.recorded"}, e.EventTypes)
}

// TestEndpointURLRefused: a URL the SSRF guard refuses is a 400 naming url, and nothing is
// written or changed.
func TestEndpointURLRefused(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	for _, url := range []string{"http://93.184.216.34/hook", "https://127.0.0.1/hook", "https://169.254.169.254/latest", "not a url"} {
		_, err := s.Create(ctx, b.admin, NewEndpoint{URL: url})
		requireAPIError(t, err, "url_not_allowed", "url")
	}
	list, err := s.List(ctx, b.admin, 100)
	require.NoError(t, err)
	require.Empty(t, list)

	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook})
	require.NoError(t, err)
	private := "https://10.0.0.1/hook"
	_, err = s.Update(ctx, b.admin, e.ShortID, EndpointChange{URL: &private})
	requireAPIError(t, err, "url_not_allowed", "url")
	got, err := s.Get(ctx, b.admin, e.ShortID)
	require.NoError(t, err)
	require.Equal(t, publicHook, got.URL)
}

func TestEndpointUpdate(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook, EventTypes: []string{"turn.completed"}})
	require.NoError(t, err)
	off := false
	got, err := s.Update(ctx, b.admin, e.ID.String(), EndpointChange{Enabled: &off, EventTypes: []string{"spend.recorded", "*"}})
	require.NoError(t, err)
	require.False(t, got.Enabled)
	require.Equal(t, []string{"*"}, got.EventTypes)

	got, err = s.Update(ctx, b.admin, e.ShortID, EndpointChange{})
	require.NoError(t, err)
	require.Equal(t, []string{"*"}, got.EventTypes, "no event types given leaves them as they are")
}

// TestEndpointsOfOtherWorkspace: an endpoint of another workspace is not found, naming id.
func TestEndpointsOfOtherWorkspace(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook})
	require.NoError(t, err)
	stranger := store.Principal{Role: "owner", WorkspaceID: b.other}
	_, err = s.Get(ctx, stranger, e.ShortID)
	requireAPIError(t, err, "webhook_endpoint_not_found", "id")
	on := true
	_, err = s.Update(ctx, stranger, e.ShortID, EndpointChange{Enabled: &on})
	requireAPIError(t, err, "webhook_endpoint_not_found", "id")
	requireAPIError(t, s.Delete(ctx, stranger, e.ShortID), "webhook_endpoint_not_found", "id")
	_, err = s.Attempts(ctx, stranger, e.ShortID, 10)
	requireAPIError(t, err, "webhook_endpoint_not_found", "id")
	list, err := s.List(ctx, stranger, 100)
	require.NoError(t, err)
	require.Empty(t, list)
}

// TestEndpointsRoles: a viewer reads endpoints but changes none.
func TestEndpointsRoles(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook})
	require.NoError(t, err)
	viewer := store.Principal{Role: "viewer", WorkspaceID: b.ws}
	_, err = s.Get(ctx, viewer, e.ShortID)
	require.NoError(t, err)
	_, err = s.Create(ctx, viewer, NewEndpoint{URL: publicHook})
	requireAPIError(t, err, "role_not_allowed", "")
	_, err = s.Update(ctx, viewer, e.ShortID, EndpointChange{})
	requireAPIError(t, err, "role_not_allowed", "")
	requireAPIError(t, s.Delete(ctx, viewer, e.ShortID), "role_not_allowed", "")
	_, _, err = s.Redeliver(ctx, viewer, e.ShortID, "evt_x")
	requireAPIError(t, err, "role_not_allowed", "")
}

// TestRedeliver: the one redelivery rule of /v1 and the dashboard: an enabled endpoint and
// an event of the workspace make one delivery job; anything else makes none.
func TestRedeliver(t *testing.T) {
	s, b := setupEndpoints(t)
	ctx := context.Background()
	e, err := s.Create(ctx, b.admin, NewEndpoint{URL: publicHook})
	require.NoError(t, err)
	ev := appendEvents(t, b.store, b.ws, turn(1))[0]
	theirs := appendEvents(t, b.store, b.other, turn(2))[0]

	_, _, err = s.Redeliver(ctx, b.admin, e.ShortID, "evt_unknown")
	requireAPIError(t, err, "event_not_found", "event_id")
	_, _, err = s.Redeliver(ctx, b.admin, e.ShortID, theirs.ShortID)
	requireAPIError(t, err, "event_not_found", "event_id")
	_, _, err = s.Redeliver(ctx, b.admin, "whe-unknown", ev.ShortID)
	requireAPIError(t, err, "webhook_endpoint_not_found", "id")

	off := false
	_, err = s.Update(ctx, b.admin, e.ShortID, EndpointChange{Enabled: &off})
	require.NoError(t, err)
	_, _, err = s.Redeliver(ctx, b.admin, e.ShortID, ev.ShortID)
	requireAPIError(t, err, "webhook_endpoint_disabled", "")
	require.Contains(t, err.Error(), "enable it first")
	rivertest.RequireNotInserted(ctx, t, b.driver, DeliveryArgs{}, nil)

	on := true
	_, err = s.Update(ctx, b.admin, e.ShortID, EndpointChange{Enabled: &on})
	require.NoError(t, err)
	gotE, gotEv, err := s.Redeliver(ctx, b.admin, e.ShortID, ev.ShortID)
	require.NoError(t, err)
	require.Equal(t, e.ID, gotE.ID)
	require.Equal(t, ev.ShortID, gotEv.ShortID)
	job := rivertest.RequireInserted(ctx, t, b.driver, DeliveryArgs{}, &rivertest.RequireInsertedOpts{Queue: DeliveryQueue, MaxAttempts: MaxAttempts})
	var args DeliveryArgs
	require.NoError(t, json.Unmarshal(job.EncodedArgs, &args))
	require.Equal(t, DeliveryArgs{WorkspaceID: b.ws, EndpointID: e.ID, EventSeq: ev.Seq}, args)
	require.NotEqual(t, uuid.Nil, args.EndpointID)
}
