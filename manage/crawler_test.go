package manage_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"switchboard/agent"
	"switchboard/apierr"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
)

// site serves a small website; /broken answers 500.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	pages := map[string]string{
		"/":        `<html><head><title>Home</title></head><body><p>Welcome to the help centre of Northwind.</p><a href="/returns">Returns</a></body></html>`,
		"/returns": `<html><head><title>Returns</title></head><body><p>Returns are accepted within thirty days of delivery.</p></body></html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := pages[r.URL.Path]
		switch {
		case r.URL.Path == "/broken":
			w.WriteHeader(http.StatusInternalServerError)
		case !ok:
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, body)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// crawl queues a crawl of url for a new agent and works the job with River's test worker,
// in a transaction rolled back at the end of the test.
func crawl(t *testing.T, svc *manage.Service, b *testBundle, url string) (*rivertest.WorkResult, store.Source, error) {
	t.Helper()
	ctx := context.Background()
	id := createAgent(t, svc, b.ws, "Crawled")
	res, err := svc.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: url})
	require.NoError(t, err)
	job := rivertest.RequireInserted(ctx, t, b.driver, manage.CrawlArgs{}, nil)

	crawler := manage.NewCrawler(b.store, netguard.Guard{AllowPrivate: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	worker := rivertest.NewWorker(t, riverpgxv5.New(b.store.Pool()), &river.Config{}, river.Worker[manage.CrawlArgs](crawler))
	tx, err := b.store.Pool().Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	result, workErr := worker.WorkJob(ctx, t, tx, job.JobRow)
	require.NotNil(t, result, "worker: %v", workErr)

	src, err := b.store.SourceByID(ctx, b.ws, mustUUID(t, res.SourceID))
	require.NoError(t, err)
	return result, src, workErr
}

func TestCrawlerStoresTheSite(t *testing.T) {
	t.Parallel()
	svc, b := setup(t)
	srv := site(t)
	result, src, err := crawl(t, svc, b, srv.URL+"/")
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, "ready", src.Status)
	require.Equal(t, 2, src.Pages)
	require.Nil(t, src.Error)

	var urls []string
	rows, err := b.store.Pool().Query(context.Background(), `SELECT url FROM knowledge_chunks WHERE source_id = $1 ORDER BY url`, src.ID)
	require.NoError(t, err)
	urls, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{srv.URL + "/", srv.URL + "/returns"}, urls)
}

func TestCrawlerRecordsAFailedCrawl(t *testing.T) {
	t.Parallel()
	svc, b := setup(t)
	srv := site(t)
	result, src, err := crawl(t, svc, b, srv.URL+"/broken")
	require.NoError(t, err, "the failure is the source's, recorded; the job is done")
	require.Equal(t, river.EventKindJobCompleted, result.EventKind)
	require.Equal(t, "failed", src.Status)
	require.NotNil(t, src.Error)
	require.Contains(t, *src.Error, "500")
}

func TestCrawlerCancelsForADeletedSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	crawler := manage.NewCrawler(b.store, netguard.Guard{AllowPrivate: true}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	worker := rivertest.NewWorker(t, riverpgxv5.New(b.store.Pool()), &river.Config{}, river.Worker[manage.CrawlArgs](crawler))
	tx, err := b.store.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	id := createAgent(t, svc, b.ws, "Gone")
	res, err := svc.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1:9/"})
	require.NoError(t, err)
	_, err = svc.DeleteAgent(ctx, b.ws, manage.DeleteAgentInput{AgentID: id})
	require.NoError(t, err)
	result, _ := worker.Work(ctx, t, tx, manage.CrawlArgs{WorkspaceID: b.ws, SourceID: mustUUID(t, res.SourceID)}, nil)
	require.Equal(t, river.EventKindJobCancelled, result.EventKind)
	result, _ = worker.Work(ctx, t, tx, manage.CrawlArgs{WorkspaceID: b.other, SourceID: mustUUID(t, res.SourceID)}, nil)
	require.Equal(t, river.EventKindJobCancelled, result.EventKind, "a job never reads another workspace's source")
}

// TestDeployToChannelTellsTheTruth: an agent deployed with channel_id to a connected channel
// answers its inbound traffic, and get_agent says so; by type it is outbound only, and
// get_agent names no inbound channel.
func TestDeployToChannelTellsTheTruth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	ch := b.channel(t, b.ws, "sms", "Main line", true)
	id := createAgent(t, svc, b.ws, "Holder")
	byType := createAgent(t, svc, b.ws, "Outbound")

	res, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: byType, Channel: "sms"})
	require.NoError(t, err)
	require.Contains(t, res.Message, "outbound messages (campaigns) only")
	require.NotNil(t, res.Note)
	got, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: byType})
	require.NoError(t, err)
	require.Equal(t, []string{"sms"}, got.Agent.Deployments)
	require.Empty(t, got.Agent.InboundChannels, "a deployment by type receives nothing")

	res, err = svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, ChannelID: ch.ID})
	require.NoError(t, err)
	require.True(t, *res.Inbound)
	require.Equal(t, "Holder answers inbound traffic on Main line.", res.Message)
	got, err = svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: id})
	require.NoError(t, err)
	require.Equal(t, []manage.InboundChannel{{ChannelID: ch.ID, Provider: "sms", Name: "Main line"}}, got.Agent.InboundChannels)

	// A channel that stops being connected stops being described as traffic.
	_, err = b.store.Pool().Exec(ctx, `UPDATE channels SET status = 'needs_setup', setup = 'gone' WHERE id = $1`, ch.ID)
	require.NoError(t, err)
	got, err = svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: id})
	require.NoError(t, err)
	require.Empty(t, got.Agent.InboundChannels)
}

// TestDisclosure covers get_agent's disclosure block for each state of the safeguard.
func TestDisclosure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	voiceYAML := readFile(t, "../testdata/blueprints/valid/voice-hotline.yaml")
	rec, err := b.store.CreateRecording(ctx, b.ws, "disclosure", "hello")
	require.NoError(t, err)
	// The voice blueprint's agent speaks es-MX, so its default text is the Spanish one.
	const spanishVoice = "Hola, está hablando con un asistente de IA automatizado. Esta llamada puede ser grabada."

	for _, tc := range []struct {
		name    string
		voice   string // "blueprint", "deployment" or "" (text only)
		updates map[string]json.RawMessage
		note    string // a phrase of the note
		want    manage.Disclosure
	}{
		{name: "text only", note: "Text-only", want: manage.Disclosure{Enabled: true, Applies: false, Mode: "spoken_text",
			SpokenText: manage.DefaultDisclosureText, UsingDefaultText: true}},
		{name: "voice channel in the blueprint", note: "platform's default disclosure text", voice: "blueprint", want: manage.Disclosure{Enabled: true, Applies: true, Mode: "spoken_text",
			SpokenText: spanishVoice, UsingDefaultText: true}},
		{name: "voice deployment", note: "platform's default disclosure text", voice: "deployment", want: manage.Disclosure{Enabled: true, Applies: true, Mode: "spoken_text",
			SpokenText: manage.DefaultDisclosureText, UsingDefaultText: true}},
		{name: "switched off", note: "switched off", voice: "blueprint", updates: map[string]json.RawMessage{"disclosureEnabled": json.RawMessage(`false`)},
			want: manage.Disclosure{Enabled: false, Applies: false, Mode: "spoken_text", SpokenText: spanishVoice, UsingDefaultText: true}},
		{name: "own text", note: "agent's own disclosure text", voice: "blueprint", updates: map[string]json.RawMessage{"disclosureText": json.RawMessage(`"I am an AI."`)},
			want: manage.Disclosure{Enabled: true, Applies: true, Mode: "spoken_text", SpokenText: "I am an AI."}},
		{name: "recording", note: "playing the disclosure recording", voice: "blueprint", updates: map[string]json.RawMessage{"disclosureRecordingId": json.RawMessage(`"` + rec.String() + `"`)},
			want: manage.Disclosure{Enabled: true, Applies: true, Mode: "recording", SpokenText: spanishVoice, UsingDefaultText: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := agentYAML("Agent")
			if tc.voice == "blueprint" {
				yaml = voiceYAML
			}
			created, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: yaml})
			require.NoError(t, err)
			if tc.voice == "deployment" {
				line := b.channel(t, b.ws, "telco_voice", "Voice line "+tc.name, true)
				_, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: created.AgentID, ChannelID: line.ID})
				require.NoError(t, err)
			}
			if tc.updates != nil {
				_, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: created.AgentID, Updates: tc.updates})
				require.NoError(t, err)
			}
			res, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: created.AgentID})
			require.NoError(t, err)
			got := *res.Disclosure
			require.Contains(t, got.Note, tc.note)
			got.Note = ""
			want := tc.want
			if want.Mode == "recording" {
				id := rec.String()
				want.RecordingID = &id
			}
			require.Equal(t, want, got)
		})
	}
}

// TestAgentTools: the operations are the builder assistant's tools, with the same classes
// and the same workspace scoping.
func TestAgentTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	tools := map[string]agent.Tool{}
	for _, tool := range svc.AgentTools() {
		tools[tool.Name] = tool
		require.True(t, json.Valid(tool.Parameters), tool.Name)
	}
	require.Len(t, tools, len(svc.Operations()))
	require.Equal(t, agent.Change, tools["create_agent"].Class)
	require.Equal(t, agent.Risky, tools["delete_agent"].Class)
	require.Equal(t, agent.Risky, tools["deploy_agent"].Class)

	args, err := json.Marshal(manage.CreateAgentInput{YAML: agentYAML("Tool made")})
	require.NoError(t, err)
	out, err := tools["create_agent"].Run(ctx, agent.Call{WorkspaceID: b.ws, Arguments: args})
	require.NoError(t, err)
	id := out.(manage.CreateAgentResult).AgentID
	_, err = b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
	require.NoError(t, err)
	_, err = tools["get_agent"].Run(ctx, agent.Call{WorkspaceID: b.other, Arguments: json.RawMessage(`{"agent_id":"` + id + `"}`)})
	requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
}

// TestRecrawlSourceQueuesTheSameSourceAgain: a re-crawl puts the source back to queued and
// queues its crawl once more, without adding a second source; a file source, an unknown id
// and another workspace's agent are 404.
func TestRecrawlSourceQueuesTheSameSourceAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	id := createAgent(t, svc, b.ws, "Recrawled")
	first, err := svc.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1:9/docs"})
	require.NoError(t, err)
	sid := mustUUID(t, first.SourceID)
	require.NoError(t, b.store.SetSourceStatus(ctx, b.ws, sid, "ready", nil, 4))

	again, err := svc.RecrawlSource(ctx, b.ws, id, first.SourceID)
	require.NoError(t, err)
	require.Equal(t, first.SourceID, again.SourceID)
	require.Equal(t, "queued", again.Status)
	src, err := b.store.SourceByID(ctx, b.ws, sid)
	require.NoError(t, err)
	require.Equal(t, "queued", src.Status)
	sources, err := b.store.AgentSources(ctx, b.ws, mustUUID(t, id))
	require.NoError(t, err)
	require.Len(t, sources, 1)
	var jobs int
	require.NoError(t, b.store.Pool().QueryRow(ctx,
		`SELECT count(*) FROM river_job WHERE kind = 'crawl_website' AND args->>'source_id' = $1`, first.SourceID).Scan(&jobs))
	require.Equal(t, 2, jobs)

	for _, ref := range []string{uuid.NewString(), "not-a-uuid"} {
		_, err = svc.RecrawlSource(ctx, b.ws, id, ref)
		require.ErrorContains(t, err, "no website source")
	}
	_, err = svc.RecrawlSource(ctx, b.other, id, first.SourceID)
	require.Error(t, err, "another workspace's agent is not found")
}
