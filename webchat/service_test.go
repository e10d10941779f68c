package webchat_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/store"
	"switchboard/store/storetest"
	"switchboard/webchat"
)

// lenaBlueprint is the stored blueprint (JSON) of the agent the tests deploy.
const lenaBlueprint = `{"agent":{"name":"lena","language":"de","persona":{"display_name":"Lena","tone":"friendly","greeting":"Hallo! Ich bin Lena."},
"llm":{"model":"beta"}}}`

const own = "https://switchboard.test"

type testBundle struct {
	st        *store.Store
	svc       *webchat.Service
	tokens    *webchat.Tokens
	workspace store.Workspace
	agent     store.Agent
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	ws, err := st.CreateWorkspace(ctx, "acme-"+uuid.NewString()[:8], 5_000_000_000)
	require.NoError(t, err)
	a, _, err := st.CreateAgent(ctx, ws.ID, "lena", json.RawMessage(lenaBlueprint), nil)
	require.NoError(t, err)
	tokens := webchat.NewTokens([]byte("test key"))
	// No agent runtime: every test here stops before the turn, or at the runtime's absence.
	return &testBundle{st: st, svc: webchat.NewService(st, tokens, nil, own), tokens: tokens, workspace: ws, agent: a}
}

// deploy deploys the agent on channel with config and returns the deployment as the embed
// routes find it.
func (b *testBundle) deploy(t *testing.T, channel, config string) (uuid.UUID, store.WebchatDeployment) {
	t.Helper()
	dep, err := b.st.DeployAgent(context.Background(), b.workspace.ID, store.Deploy{AgentID: b.agent.ID, ChannelType: channel, Config: json.RawMessage(config)})
	require.NoError(t, err)
	d, _ := b.svc.Deployment(context.Background(), dep.ID.String(), "")
	return dep.ID, d
}

func (b *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := b.st.Pool().Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func code(err error) string {
	if e := apierr.As(err); e != nil {
		return e.Code
	}
	return ""
}

func TestDeploymentLookup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	id, d := b.deploy(t, "webchat", `{}`)
	require.Equal(t, id, d.ID)
	require.Equal(t, b.workspace.ID, d.WorkspaceID)
	require.Equal(t, b.agent.ID, d.AgentID)

	// Not a UUID, unknown, or of another channel: the same 404.
	voice, _ := b.deploy(t, "telco_voice", `{}`)
	for _, ref := range []string{"nope", uuid.NewString(), voice.String()} {
		_, err := b.svc.Deployment(ctx, ref, "")
		require.Equal(t, "deployment_not_found", code(err), ref)
		require.Equal(t, apierr.KindNotFound, apierr.As(err).Kind)
	}

	// The loader exists for the deployment, and names it and the server.
	script, err := b.svc.Loader(ctx, id)
	require.NoError(t, err)
	require.Contains(t, string(script), id.String())
	require.Contains(t, string(script), own)
	_, err = b.svc.Loader(ctx, uuid.New())
	require.Equal(t, "deployment_not_found", code(err))
}

func TestOriginPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, anyOrigin := b.deploy(t, "webchat", `{}`)
	_, listed := b.deploy(t, "webchat", `{"allowed_origins":["https://shop.example/", " https://Blog.example"]}`)
	_, broken := b.deploy(t, "webchat", `{"allowed_origins":"https://shop.example"}`)

	for _, c := range []struct {
		d      store.WebchatDeployment
		origin string
		ok     bool
	}{
		{anyOrigin, "https://evil.example", true}, // empty list: any page
		{listed, "https://shop.example", true},    // trailing slash and case do not matter
		{listed, "https://blog.example", true},
		{listed, "", true},  // no Origin: not a cross-origin browser request
		{listed, own, true}, // the server's own pages (the test page)
		{listed, "https://evil.example", false},
		{listed, "http://shop.example", false},  // another scheme is another origin
		{broken, "https://shop.example", false}, // unreadable: never "any"
		{broken, "", false},
	} {
		err := b.svc.CheckOrigin(c.d, c.origin)
		if c.ok {
			require.NoError(t, err, c.origin)
			continue
		}
		require.Equal(t, "origin_not_allowed", code(err), c.origin)
		require.Equal(t, apierr.KindPermission, apierr.As(err).Kind)
	}
}

func TestVisitorTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, d := b.deploy(t, "webchat", `{}`)
	_, other := b.deploy(t, "webchat", `{}`)

	token := b.tokens.Issue(d.ID, "mc-abc")
	conv, ok := b.svc.Visitor(d, token)
	require.True(t, ok)
	require.Equal(t, "mc-abc", conv)
	conv, ok = b.svc.Visitor(d, "")
	require.True(t, ok, "no token: a new visitor")
	require.Empty(t, conv)

	for name, bad := range map[string]string{
		"another deployment's": b.tokens.Issue(other.ID, "mc-abc"),
		"another key's":        webchat.NewTokens([]byte("guess")).Issue(d.ID, "mc-abc"),
		"tampered":             strings.Replace(token, ".", "x.", 1),
		"no signature":         "bWMtYWJj",
	} {
		_, ok = b.svc.Visitor(d, bad)
		require.False(t, ok, name)
	}

	// A rotation: the new key signs, the previous one still checks.
	rotated := webchat.NewTokens([]byte("new key"), []byte("test key"))
	conv, ok = rotated.Conversation(d.ID, token)
	require.True(t, ok)
	require.Equal(t, "mc-abc", conv)
	_, ok = b.tokens.Conversation(d.ID, rotated.Issue(d.ID, "mc-abc"))
	require.False(t, ok, "the previous key does not check the new one's tokens")

	// Keyed by the store's keyring: two processes (replicas, restarts) agree.
	one, err := webchat.KeyedTokens(nil, b.st)
	require.NoError(t, err)
	two, err := webchat.KeyedTokens(nil, b.st)
	require.NoError(t, err)
	_, ok = two.Conversation(d.ID, one.Issue(d.ID, "mc-abc"))
	require.True(t, ok)
}

func TestPaused(t *testing.T) {
	t.Parallel()
	capped := int64(100)
	for name, c := range map[string]struct {
		d      store.WebchatDeployment
		paused bool
	}{
		"credit":    {webchatDeployment(store.WorkspaceActive, 1, nil, 0), false},
		"no credit": {webchatDeployment(store.WorkspaceActive, 0, nil, 0), true},
		"suspended": {webchatDeployment(store.WorkspaceSuspended, 1000, nil, 0), true},
		"under cap": {webchatDeployment(store.WorkspaceActive, 1000, &capped, 99), false},
		"cap":       {webchatDeployment(store.WorkspaceActive, 1000, &capped, 100), true},
	} {
		err := webchat.Paused(c.d)
		if !c.paused {
			require.NoError(t, err, name)
			continue
		}
		require.Equal(t, "insufficient_quota", code(err), name)
		require.Equal(t, "This chat is paused right now. Please try again later.", apierr.As(err).Message, "visitors learn no reason: "+name)
	}
}

func webchatDeployment(status string, balance int64, monthlyCap *int64, spent int64) store.WebchatDeployment {
	var d store.WebchatDeployment
	d.WorkspaceStatus, d.BalanceNanoUSD, d.MonthlyCapNanoUSD, d.MonthSpendNanoUSD = status, balance, monthlyCap, spent
	return d
}

func TestBootstrapAndAvailability(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, d := b.deploy(t, "webchat", `{}`)

	boot, err := b.svc.Bootstrap(ctx, d)
	require.NoError(t, err)
	require.Equal(t, "Lena", boot.DisplayName)
	require.Equal(t, "Hallo! Ich bin Lena.", boot.Greeting)
	require.Equal(t, "de", boot.Language)
	require.True(t, boot.Available)
	require.Nil(t, boot.Unavailable)
	require.Nil(t, boot.Disclosure, "no voice channel: the disclosure does not apply")
	require.Equal(t, 4000, boot.MaxMessageChars)

	// The test page shows the same bootstrap, found by the agent's id alone.
	page, err := b.svc.TestPage(ctx, b.agent.ID.String())
	require.NoError(t, err)
	require.Equal(t, boot, page.Bootstrap)
	require.Equal(t, b.agent.ID, page.Agent.ID)
	for _, ref := range []string{"nope", uuid.NewString()} {
		_, err = b.svc.TestPage(ctx, ref)
		require.Equal(t, "agent_not_found", code(err))
	}

	// A workspace without credit: the bootstrap says paused, a message is refused.
	b.exec(t, "UPDATE workspaces SET balance_nano_usd = 0 WHERE id = $1", b.workspace.ID)
	_, d = b.deploy(t, "webchat", `{}`)
	boot, err = b.svc.Bootstrap(ctx, d)
	require.NoError(t, err)
	require.False(t, boot.Available)
	require.NotNil(t, boot.Unavailable)
	_, err = b.svc.Chat(ctx, d, webchat.ChatInput{Message: "hi"})
	require.Equal(t, "insufficient_quota", code(err))

	// A disabled agent: 409 on both, without the management hint; the test page still shows.
	b.exec(t, "UPDATE agents SET status = 'disabled' WHERE id = $1", b.agent.ID)
	_, err = b.svc.Bootstrap(ctx, d)
	require.Equal(t, "agent_disabled", code(err))
	require.Equal(t, apierr.KindConflict, apierr.As(err).Kind)
	b.exec(t, "UPDATE workspaces SET balance_nano_usd = 1000 WHERE id = $1", b.workspace.ID)
	_, d = b.deploy(t, "webchat", `{}`)
	_, err = b.svc.Chat(ctx, d, webchat.ChatInput{Message: "hi"})
	require.Equal(t, "agent_disabled", code(err))
	require.Empty(t, apierr.As(err).Hint)
	page, err = b.svc.TestPage(ctx, b.agent.ID.String())
	require.NoError(t, err)
	require.Equal(t, "disabled", page.Agent.Status)
}

func TestChatRefusalsComeBeforeTheTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, d := b.deploy(t, "webchat", `{}`)
	_, other := b.deploy(t, "webchat", `{}`)

	for name, c := range map[string]struct {
		in   webchat.ChatInput
		code string
	}{
		"another deployment's token": {webchat.ChatInput{Message: "hi", VisitorToken: b.tokens.Issue(other.ID, "mc-1")}, "visitor_token_invalid"},
		"empty":                      {webchat.ChatInput{Message: ""}, "invalid_value"},
		"spaces":                     {webchat.ChatInput{Message: " \n\t"}, "invalid_value"},
		"too long":                   {webchat.ChatInput{Message: strings.Repeat("ü", 4001)}, "invalid_value"},
	} {
		_, err := b.svc.Chat(ctx, d, c.in)
		require.Equal(t, c.code, code(err), name)
		require.Equal(t, apierr.KindInvalid, apierr.As(err).Kind, name)
	}

	// Every rule passed: the turn is next (here, no runtime is wired).
	_, err := b.svc.Chat(ctx, d, webchat.ChatInput{Message: strings.Repeat("ü", 4000)})
	require.Equal(t, apierr.KindInternal, apierr.As(err).Kind)
}

func TestBlockingVisitors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, d := b.deploy(t, "webchat", `{}`)
	b.exec(t, `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, 'mc-blocked', 'webchat'), ($1, 'mc-sms', 'sms')`, b.workspace.ID)
	token := b.tokens.Issue(d.ID, "mc-blocked")

	v, created, err := b.svc.Block(ctx, b.workspace.ID, "mc-blocked", "  Spam links ")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "Spam links", v.Reason)
	_, created, err = b.svc.Block(ctx, b.workspace.ID, "mc-blocked", "again")
	require.NoError(t, err)
	require.False(t, created, "blocking twice answers the first block")
	_, _, err = b.svc.Block(ctx, b.workspace.ID, "mc-sms", "")
	require.Equal(t, "not_webchat", code(err))
	_, _, err = b.svc.Block(ctx, b.workspace.ID, "mc-nobody", "")
	require.Equal(t, apierr.KindNotFound, apierr.As(err).Kind)

	_, err = b.svc.Chat(ctx, d, webchat.ChatInput{Message: "hi", VisitorToken: token})
	require.Equal(t, "visitor_blocked", code(err))
	require.Equal(t, apierr.KindPermission, apierr.As(err).Kind)
	// Read with the visitor's token, the deployment carries the block (the route's one read);
	// read with another deployment's token, it carries nothing and the turn reads the block.
	withToken, err := b.svc.Deployment(ctx, d.ID.String(), token)
	require.NoError(t, err)
	require.True(t, withToken.VisitorBlocked)
	require.Equal(t, "mc-blocked", withToken.Visitor)
	_, err = b.svc.Chat(ctx, withToken, webchat.ChatInput{Message: "hi", VisitorToken: token})
	require.Equal(t, "visitor_blocked", code(err))
	_, other := b.deploy(t, "webchat", `{}`)
	foreign, err := b.svc.Deployment(ctx, d.ID.String(), b.tokens.Issue(other.ID, "mc-blocked"))
	require.NoError(t, err)
	require.Equal(t, "", foreign.Visitor, "a token of another deployment names no visitor here")
	require.False(t, foreign.VisitorBlocked)
	// A deployment read for one visitor says nothing of another: the other's block is read.
	b.exec(t, `INSERT INTO conversations (workspace_id, short_id, channel) VALUES ($1, 'mc-free', 'webchat')`, b.workspace.ID)
	free, err := b.svc.Deployment(ctx, d.ID.String(), b.tokens.Issue(d.ID, "mc-free"))
	require.NoError(t, err)
	require.False(t, free.VisitorBlocked)
	_, err = b.svc.Chat(ctx, free, webchat.ChatInput{Message: "hi", VisitorToken: token})
	require.Equal(t, "visitor_blocked", code(err))

	// Another workspace neither sees nor lifts the block.
	ws2, err := b.st.CreateWorkspace(ctx, "other-"+uuid.NewString()[:8], 1000)
	require.NoError(t, err)
	list, err := b.svc.Blocked(ctx, ws2.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = b.svc.Unblock(ctx, ws2.ID, "mc-blocked")
	require.Equal(t, apierr.KindNotFound, apierr.As(err).Kind)

	list, err = b.svc.Blocked(ctx, b.workspace.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	_, err = b.svc.Unblock(ctx, b.workspace.ID, "mc-blocked")
	require.NoError(t, err)
	_, err = b.svc.Chat(ctx, d, webchat.ChatInput{Message: "hi", VisitorToken: token})
	require.Equal(t, apierr.KindInternal, apierr.As(err).Kind, "unblocked: on to the turn")
	withToken, err = b.svc.Deployment(ctx, d.ID.String(), token)
	require.NoError(t, err)
	require.False(t, withToken.VisitorBlocked, "unblocked")
	_, err = b.svc.Chat(ctx, withToken, webchat.ChatInput{Message: "hi", VisitorToken: token})
	require.Equal(t, apierr.KindInternal, apierr.As(err).Kind, "unblocked: on to the turn")
}
