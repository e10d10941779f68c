package manage_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/manage"
	"switchboard/netguard"
	"switchboard/store"
	"switchboard/store/storetest"
)

const publicURL = "https://sb.test"

// testBundle is what a test of the operations needs: the service over a fresh migrated
// database, two workspaces (the caller's and another one, whose data must stay invisible)
// and the job queue's driver, to see what was enqueued.
type testBundle struct {
	store  *store.Store
	driver *riverpgxv5.Driver
	ws     uuid.UUID // the caller's workspace
	other  uuid.UUID // another workspace
}

// setup builds the service with an insert-only River client (no workers: enqueued jobs stay
// in river_job for the test to read). The guard lets crawls reach private http addresses, as
// WEBHOOK_ALLOW_PRIVATE=1 does; TestCrawlWebsite builds a strict one for its refusals.
func setup(t *testing.T) (*manage.Service, *testBundle) {
	t.Helper()
	ctx := context.Background()
	st := storetest.New(t)
	driver := riverpgxv5.New(st.Pool())
	jobs, err := river.NewClient(driver, &river.Config{})
	require.NoError(t, err)
	ws, err := st.CreateWorkspace(ctx, "acme", 0)
	require.NoError(t, err)
	other, err := st.CreateWorkspace(ctx, "globex", 0)
	require.NoError(t, err)
	svc := manage.New(st, catalog.Default(), netguard.Guard{AllowPrivate: true}, jobs, publicURL)
	return svc, &testBundle{store: st, driver: driver, ws: ws.ID, other: other.ID}
}

func agentYAML(name string) string {
	return `agent:
  name: ` + name + `
  language: en
  persona:
    display_name: ` + name + `
    tone: friendly
    greeting: Hi! How can I help?
  llm:
    provider: alpha
    model: alpha-haiku-4-5
    temperature: 0.7
    max_tokens: 1024
    system_prompt: You are a helpful assistant.
`
}

// createAgent creates an agent named name in workspace ws and returns its id.
func createAgent(t *testing.T, svc *manage.Service, ws uuid.UUID, name string) string {
	t.Helper()
	res, err := svc.CreateAgent(context.Background(), ws, manage.CreateAgentInput{YAML: agentYAML(name)})
	require.NoError(t, err)
	return res.AgentID
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// count counts rows of a table, in every workspace.
func (b *testBundle) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	require.NoError(t, b.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n))
	return n
}

// crawlJobs returns the args of the enqueued crawl jobs, oldest first; want is how many there
// must be.
func (b *testBundle) crawlJobs(t *testing.T, want int) []manage.CrawlArgs {
	t.Helper()
	if want == 0 {
		rivertest.RequireNotInserted(context.Background(), t, b.driver, manage.CrawlArgs{}, nil)
		return nil
	}
	expected := make([]rivertest.ExpectedJob, want)
	for i := range expected {
		expected[i] = rivertest.ExpectedJob{Args: manage.CrawlArgs{}, Opts: &rivertest.RequireInsertedOpts{MaxAttempts: 3}}
	}
	rows := rivertest.RequireManyInserted(context.Background(), t, b.driver, expected)
	out := make([]manage.CrawlArgs, len(rows))
	for i, r := range rows {
		require.NoError(t, json.Unmarshal(r.EncodedArgs, &out[i]))
	}
	return out
}

// requireAPIError checks err is the domain error of the given kind, code and param.
func requireAPIError(t *testing.T, err error, kind apierr.Kind, code, param string) *apierr.Error {
	t.Helper()
	var e *apierr.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, kind, e.Kind, e.Message)
	require.Equal(t, code, e.Code, e.Message)
	require.Equal(t, param, e.Param, e.Message)
	return e
}

func mustUUID(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	require.NoError(t, err)
	return id
}

func TestCreateAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("stores the agent and its blueprint", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: readFile(t, "../testdata/blueprints/valid/minimal.yaml")})
		require.NoError(t, err)
		require.True(t, res.Success)
		require.Equal(t, "Helper", res.AgentName)
		require.Equal(t, "enabled", res.Status)
		require.Equal(t, publicURL+"/agents/"+res.AgentID+"/test", res.TestURL)
		require.Empty(t, res.Warnings)

		a, err := b.store.AgentByID(ctx, b.ws, mustUUID(t, res.AgentID))
		require.NoError(t, err)
		require.Equal(t, "Helper", a.Name)
		require.Equal(t, "enabled", a.Status)
		var bp blueprint.Blueprint
		require.NoError(t, json.Unmarshal(a.Blueprint, &bp))
		require.Equal(t, "alpha-haiku-4-5", bp.Agent.LLM.Model)
		require.InDelta(t, 0.7, *bp.Agent.LLM.Temperature, 1e-9)
		_, err = b.store.AgentByID(ctx, b.other, a.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "stored in the caller's workspace only")
		b.crawlJobs(t, 0)
	})

	t.Run("knowledge sources: website crawls are queued, others pending for ingestion", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		seedUpload(t, b, b.ws, fullBlueprintUpload, "uploads/catalogue.html", "text/html", "<p>Catalogue</p>")
		res, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: readFile(t, "../testdata/blueprints/valid/full.yaml")})
		require.NoError(t, err)
		warnings := strings.Join(res.Warnings, "\n")
		require.Contains(t, warnings, "no file named kb/returns-policy.md is uploaded yet")
		require.Contains(t, warnings, "no file named uploads/size-guide.pdf is uploaded yet")

		sources, err := b.store.AgentSources(ctx, b.ws, mustUUID(t, res.AgentID))
		require.NoError(t, err)
		byStatus := map[string][]store.Source{}
		for _, s := range sources {
			byStatus[s.Status] = append(byStatus[s.Status], s)
		}
		require.Len(t, byStatus["queued"], 2)
		require.Len(t, byStatus["pending"], 5, "markdown_file, two file_upload, api, manual_text")
		require.Empty(t, byStatus["failed"])

		queued := map[uuid.UUID]bool{}
		for _, s := range byStatus["queued"] {
			require.Equal(t, "website_crawl", s.Type)
			queued[s.ID] = true
		}
		for _, job := range b.crawlJobs(t, 2) {
			require.Equal(t, b.ws, job.WorkspaceID)
			require.True(t, queued[job.SourceID], "a job per queued source")
			delete(queued, job.SourceID)
		}
		var ingested []string
		for _, job := range b.ingestJobs(t, 3) {
			src, err := b.store.SourceByID(ctx, b.ws, job.SourceID)
			require.NoError(t, err)
			ingested = append(ingested, src.Type)
		}
		require.Equal(t, []string{"file_upload", "api", "manual_text"}, ingested, "the files not uploaded yet wait")
	})

	t.Run("an invalid blueprint reports every error with its path and writes nothing", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		_, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: readFile(t, "../testdata/blueprints/invalid/multiple-errors.yaml")})
		e := requireAPIError(t, err, apierr.KindInvalid, "invalid_blueprint", "yaml")
		var errs blueprint.Errors
		require.ErrorAs(t, e, &errs)
		var paths []string
		for _, be := range errs {
			paths = append(paths, be.Path)
			require.Positive(t, be.Line, be.Path)
			require.Contains(t, e.Message, be.Path)
		}
		require.Equal(t, []string{"agent.persona.tone", "agent.persona.colour", "agent.llm.temperature",
			"agent.knowledge_base.sources[0].url", "agent.labels[1]"}, paths)
		require.Zero(t, b.count(t, "agents"))
		require.Zero(t, b.count(t, "knowledge_sources"))
		b.crawlJobs(t, 0)
	})

	t.Run("website_crawl sources are checked by the guard up front, as crawl_website does", func(t *testing.T) {
		t.Parallel()
		_, b := setup(t)
		strict := manage.New(b.store, catalog.Default(), netguard.Guard{}, nil, publicURL) // production's guard
		for _, u := range []string{
			"https://[::1%25lo]:8443/", "https://[fe80::1%25eth0]/", "https://[fd00:ec2::254%25eth0]/latest/meta-data/",
			"https://[::ffff:127.0.0.1]/", "https://[::127.0.0.1]/", "https://169.254.169.254/latest/meta-data/",
			"https://127.0.0.1/", "https://2130706433/", "http://93.184.216.34/",
		} {
			yaml := agentYAML("Crawler") + "  knowledge_base:\n    sources:\n      - type: website_crawl\n        url: https://93.184.216.34/docs\n      - type: website_crawl\n        url: \"" + u + "\"\n"
			_, err := strict.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: yaml})
			e := requireAPIError(t, err, apierr.KindInvalid, "url_not_allowed", "yaml")
			require.Contains(t, e.Message, "agent.knowledge_base.sources[1].url", u)
		}
		require.Zero(t, b.count(t, "agents"))
		require.Zero(t, b.count(t, "knowledge_sources"))
		b.crawlJobs(t, 0)
	})

	t.Run("an empty blueprint is refused", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		_, err := svc.CreateAgent(ctx, b.ws, manage.CreateAgentInput{YAML: "  \n"})
		requireAPIError(t, err, apierr.KindInvalid, "missing_blueprint", "yaml")
		require.Zero(t, b.count(t, "agents"))
	})
}

func TestUpdateAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("changes the given fields only", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		id := createAgent(t, svc, b.ws, "Before")
		res, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: id, Updates: map[string]json.RawMessage{
			"name": json.RawMessage(`"After"`), "temperature": json.RawMessage(`0.2`), "status": json.RawMessage(`"disabled"`),
			"disclosureText": json.RawMessage(`"You are talking to an AI."`),
		}})
		require.NoError(t, err)
		require.Equal(t, manage.AgentRef{Success: true, AgentID: id, AgentName: "After"}, res)

		a, err := b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
		require.NoError(t, err)
		require.Equal(t, "After", a.Name)
		require.Equal(t, "disabled", a.Status)
		require.Equal(t, "You are talking to an AI.", *a.DisclosureText)
		var bp blueprint.Blueprint
		require.NoError(t, json.Unmarshal(a.Blueprint, &bp))
		require.Equal(t, "After", bp.Agent.Name, "the blueprint and the column agree")
		require.InDelta(t, 0.2, *bp.Agent.LLM.Temperature, 1e-9)
		require.Equal(t, "Hi! How can I help?", bp.Agent.Persona.Greeting, "fields not given stay")
	})

	t.Run("a disclosure recording must be of this workspace and of kind disclosure", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		id := createAgent(t, svc, b.ws, "Voice")
		mine, err := b.store.CreateRecording(ctx, b.ws, "disclosure", "hello")
		require.NoError(t, err)
		hold, err := b.store.CreateRecording(ctx, b.ws, "voicemail_drop", "message")
		require.NoError(t, err)
		theirs, err := b.store.CreateRecording(ctx, b.other, "disclosure", "theirs")
		require.NoError(t, err)
		update := func(rec uuid.UUID) error {
			_, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: id,
				Updates: map[string]json.RawMessage{"disclosureRecordingId": json.RawMessage(`"` + rec.String() + `"`)}})
			return err
		}
		requireAPIError(t, update(theirs), apierr.KindInvalid, "recording_not_found", "updates.disclosureRecordingId")
		requireAPIError(t, update(hold), apierr.KindInvalid, "wrong_recording_kind", "updates.disclosureRecordingId")
		a, err := b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
		require.NoError(t, err)
		require.Nil(t, a.DisclosureRecordingID, "refused updates write nothing")

		require.NoError(t, update(mine))
		a, err = b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
		require.NoError(t, err)
		require.Equal(t, mine, *a.DisclosureRecordingID)
	})

	refusals := []struct {
		name        string
		updates     map[string]json.RawMessage
		kind        apierr.Kind
		code, param string
	}{
		{"no fields", map[string]json.RawMessage{}, apierr.KindInvalid, "missing_parameter", "updates"},
		{"unknown field", map[string]json.RawMessage{"colour": json.RawMessage(`"blue"`)}, apierr.KindInvalid, "unknown_field", "updates.colour"},
		{"wrong shape", map[string]json.RawMessage{"temperature": json.RawMessage(`"hot"`)}, apierr.KindInvalid, "invalid_value", "updates.temperature"},
		{"blueprint rule, under the caller's name", map[string]json.RawMessage{"temperature": json.RawMessage(`3`)}, apierr.KindInvalid, "invalid_value", "updates.temperature"},
		{"nested blueprint rule", map[string]json.RawMessage{"labels": json.RawMessage(`["ok", ""]`)}, apierr.KindInvalid, "invalid_value", "updates.labels"},
		{"bad status", map[string]json.RawMessage{"status": json.RawMessage(`"paused"`)}, apierr.KindInvalid, "invalid_value", "updates.status"},
		{"blank disclosure text", map[string]json.RawMessage{"disclosureText": json.RawMessage(`"  "`)}, apierr.KindInvalid, "invalid_value", "updates.disclosureText"},
	}
	for _, tc := range refusals {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			t.Parallel()
			svc, b := setup(t)
			id := createAgent(t, svc, b.ws, "Same")
			before, err := b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
			require.NoError(t, err)
			_, err = svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: id, Updates: tc.updates})
			requireAPIError(t, err, tc.kind, tc.code, tc.param)
			after, err := b.store.AgentByID(ctx, b.ws, before.ID)
			require.NoError(t, err)
			require.Equal(t, before, after, "nothing is written")
		})
	}

	t.Run("another workspace's agent is not found and stays as it is", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		theirs := createAgent(t, svc, b.other, "Theirs")
		_, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: theirs, Updates: map[string]json.RawMessage{"name": json.RawMessage(`"Mine"`)}})
		requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
		a, err := b.store.AgentByID(ctx, b.other, mustUUID(t, theirs))
		require.NoError(t, err)
		require.Equal(t, "Theirs", a.Name)
	})
}

func TestGetAndListAgents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	support := createAgent(t, svc, b.ws, "Support Desk")
	sales := createAgent(t, svc, b.ws, "Sales")
	theirs := createAgent(t, svc, b.other, "Support Other")
	_, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: sales, Updates: map[string]json.RawMessage{"status": json.RawMessage(`"disabled"`)}})
	require.NoError(t, err)
	_, err = svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: support, Channel: "webchat"})
	require.NoError(t, err)

	t.Run("by id", func(t *testing.T) {
		t.Parallel()
		res, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: support})
		require.NoError(t, err)
		require.Equal(t, support, res.Agent.ID)
		require.Equal(t, "Support Desk", res.Agent.Name)
		require.Equal(t, []string{"webchat"}, res.Agent.Deployments)
		require.Equal(t, "alpha-haiku-4-5", res.Agent.LLMModel)
		require.NotNil(t, res.Disclosure)
		require.False(t, res.Disclosure.Applies, "a text-only agent")
		require.Nil(t, res.Agent.Disclosure, "the disclosure is reported once, beside the agent")
	})
	t.Run("by name, case-insensitive, in this workspace only", func(t *testing.T) {
		t.Parallel()
		res, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{Name: " support "})
		require.NoError(t, err)
		require.Equal(t, 1, *res.Total)
		require.Equal(t, support, res.Agents[0].ID)
	})
	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		_, err := svc.GetAgent(ctx, b.ws, manage.GetAgentInput{})
		requireAPIError(t, err, apierr.KindInvalid, "missing_parameter", "agent_id")
		_, err = svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: "nope"})
		requireAPIError(t, err, apierr.KindInvalid, "invalid_id", "agent_id")
		_, err = svc.GetAgent(ctx, b.ws, manage.GetAgentInput{AgentID: theirs})
		requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
	})
	t.Run("list", func(t *testing.T) {
		t.Parallel()
		all, err := svc.ListAgents(ctx, b.ws, manage.ListAgentsInput{})
		require.NoError(t, err)
		require.Equal(t, 2, all.Total)
		var ids []string
		for _, a := range all.Agents {
			ids = append(ids, a.ID)
		}
		require.ElementsMatch(t, []string{support, sales}, ids)

		disabled, err := svc.ListAgents(ctx, b.ws, manage.ListAgentsInput{Status: "disabled"})
		require.NoError(t, err)
		require.Equal(t, 1, disabled.Total)
		require.Equal(t, sales, disabled.Agents[0].ID)

		_, err = svc.ListAgents(ctx, b.ws, manage.ListAgentsInput{Status: "paused"})
		requireAPIError(t, err, apierr.KindInvalid, "invalid_value", "status")
	})
}

func TestCrawlWebsite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("records the source and queues its crawl in one go", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		id := createAgent(t, svc, b.ws, "Crawler")
		res, err := svc.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1:9/docs"})
		require.NoError(t, err)
		require.Equal(t, "queued", res.Status)

		sources, err := b.store.AgentSources(ctx, b.ws, mustUUID(t, id))
		require.NoError(t, err)
		require.Len(t, sources, 1)
		src := sources[0]
		require.Equal(t, res.SourceID, src.ID.String())
		require.Equal(t, res.KnowledgeBaseID, src.KnowledgeBaseID.String())
		require.Equal(t, "http://127.0.0.1:9/docs", *src.URL)
		require.Equal(t, 2, *src.Depth, "the default depth")
		require.Equal(t, "queued", src.Status)
		require.Equal(t, []manage.CrawlArgs{{WorkspaceID: b.ws, SourceID: src.ID}}, b.crawlJobs(t, 1))
	})

	t.Run("refusals write nothing", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		// The guard of production: no private addresses, https only.
		strict := manage.New(b.store, catalog.Default(), netguard.Guard{}, nil, publicURL)
		id := createAgent(t, svc, b.ws, "Crawler")
		theirs := createAgent(t, svc, b.other, "Theirs")
		depth := func(n int) *int { return &n }
		for _, tc := range []struct {
			in          manage.CrawlWebsiteInput
			kind        apierr.Kind
			code, param string
		}{
			{manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1/", Depth: depth(0)}, apierr.KindInvalid, "invalid_value", "depth"},
			{manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1/", Depth: depth(6)}, apierr.KindInvalid, "invalid_value", "depth"},
			{manage.CrawlWebsiteInput{AgentID: id, URL: "ftp://127.0.0.1/"}, apierr.KindInvalid, "url_not_allowed", "url"},
			{manage.CrawlWebsiteInput{AgentID: id, URL: "/relative"}, apierr.KindInvalid, "url_not_allowed", "url"},
			{manage.CrawlWebsiteInput{AgentID: theirs, URL: "http://127.0.0.1/"}, apierr.KindNotFound, "agent_not_found", "agent_id"},
		} {
			_, err := svc.CrawlWebsite(ctx, b.ws, tc.in)
			requireAPIError(t, err, tc.kind, tc.code, tc.param)
		}
		for _, u := range []string{"https://127.0.0.1/", "https://10.0.0.1/", "http://example.com/"} {
			_, err := strict.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: u})
			requireAPIError(t, err, apierr.KindInvalid, "url_not_allowed", "url")
		}
		require.Zero(t, b.count(t, "knowledge_sources"))
		b.crawlJobs(t, 0)
	})
}

// deployments reads an agent's deployment rows: channel type, channel row and inbound seat.
type deploymentRow struct {
	ChannelType string
	ChannelID   *uuid.UUID
	Inbound     bool
	Config      string
}

func (b *testBundle) deployments(t *testing.T, agentID string) []deploymentRow {
	t.Helper()
	out := []deploymentRow{}
	rows, err := b.store.Pool().Query(context.Background(),
		`SELECT channel_type, channel_id, inbound, config::text FROM deployments WHERE agent_id = $1 ORDER BY created_at, id`, mustUUID(t, agentID))
	require.NoError(t, err)
	out, err = pgx.AppendRows(out, rows, pgx.RowToStructByPos[deploymentRow])
	require.NoError(t, err)
	return out
}

func TestDeployAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("to each channel type", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		for _, channel := range blueprint.ChannelTypes() {
			typ := string(channel)
			id := createAgent(t, svc, b.ws, "Agent "+typ)
			if channel != blueprint.ChannelWebchat {
				// Every type but webchat needs a connected channel of its provider first.
				_, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: channel})
				requireAPIError(t, err, apierr.KindConflict, "channel_not_connected", "channel")
				b.channel(t, b.ws, typ, "Line "+typ, true)
			}
			res, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: channel})
			require.NoError(t, err, typ)
			require.Equal(t, typ, res.Channel)
			require.Nil(t, res.Inbound, "a deployment by type has no seat")
			require.Equal(t, []deploymentRow{{ChannelType: typ, Config: "{}"}}, b.deployments(t, id), typ)
		}
	})

	t.Run("config is stored as given", func(t *testing.T) {
		t.Parallel()
		svc, b := setup(t)
		id := createAgent(t, svc, b.ws, "Configured")
		_, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: "webchat", Config: json.RawMessage(`{"color": "red"}`)})
		require.NoError(t, err)
		require.JSONEq(t, `{"color":"red"}`, b.deployments(t, id)[0].Config)
	})

	// Every refusal writes nothing; one bundle serves the table.
	svc, b := setup(t)
	mine := createAgent(t, svc, b.ws, "Mine")
	disabled := createAgent(t, svc, b.ws, "Disabled")
	_, err := svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: disabled, Updates: map[string]json.RawMessage{"status": json.RawMessage(`"disabled"`)}})
	require.NoError(t, err)
	theirs := createAgent(t, svc, b.other, "Theirs")
	sms := b.channel(t, b.ws, "sms", "Main line", true)
	theirChannel := b.channel(t, b.other, "sms", "Their line", true)
	unconnected := b.channel(t, b.ws, "sms", "Unconnected line", false)

	for _, tc := range []struct {
		name        string
		in          manage.DeployAgentInput
		kind        apierr.Kind
		code, param string
	}{
		{"neither channel nor channel_id", manage.DeployAgentInput{AgentID: mine}, apierr.KindInvalid, "missing_parameter", "channel"},
		{"unknown channel type", manage.DeployAgentInput{AgentID: mine, Channel: "fax"}, apierr.KindInvalid, "invalid_value", "channel"},
		{"take_over_inbound without channel_id", manage.DeployAgentInput{AgentID: mine, Channel: "sms", TakeOverInbound: true}, apierr.KindInvalid, "channel_id_required", "take_over_inbound"},
		// Spec: "the legacy `channel` parameter does not identify a channel row to own and is
		// rejected when `take_over_inbound` is used" — even when it agrees with channel_id.
		{"legacy channel with take_over_inbound, agreeing", manage.DeployAgentInput{AgentID: mine, Channel: "sms", ChannelID: sms.ID, TakeOverInbound: true}, apierr.KindInvalid, "channel_not_allowed", "channel"},
		{"legacy channel with take_over_inbound, disagreeing", manage.DeployAgentInput{AgentID: mine, Channel: "webchat", ChannelID: sms.ID, TakeOverInbound: true}, apierr.KindInvalid, "channel_not_allowed", "channel"},
		{"config not an object", manage.DeployAgentInput{AgentID: mine, Channel: "sms", Config: json.RawMessage(`[1]`)}, apierr.KindInvalid, "invalid_value", "config"},
		{"agent_id not a UUID", manage.DeployAgentInput{AgentID: "x", Channel: "sms"}, apierr.KindInvalid, "invalid_id", "agent_id"},
		{"channel_id not a UUID", manage.DeployAgentInput{AgentID: mine, ChannelID: "x"}, apierr.KindInvalid, "invalid_id", "channel_id"},
		{"disabled agent", manage.DeployAgentInput{AgentID: disabled, Channel: "webchat"}, apierr.KindConflict, "agent_disabled", ""},
		{"channel type and channel row disagree", manage.DeployAgentInput{AgentID: mine, Channel: "webchat", ChannelID: sms.ID}, apierr.KindInvalid, "channel_mismatch", "channel"},
		{"another workspace's agent", manage.DeployAgentInput{AgentID: theirs, Channel: "webchat"}, apierr.KindNotFound, "agent_not_found", "agent_id"},
		{"another workspace's agent on my channel", manage.DeployAgentInput{AgentID: theirs, ChannelID: sms.ID}, apierr.KindNotFound, "agent_not_found", "agent_id"},
		{"another workspace's channel", manage.DeployAgentInput{AgentID: mine, ChannelID: theirChannel.ID}, apierr.KindNotFound, "channel_not_found", "channel_id"},
		{"an unknown channel", manage.DeployAgentInput{AgentID: mine, ChannelID: uuid.NewString()}, apierr.KindNotFound, "channel_not_found", "channel_id"},
		{"a channel that needs setup", manage.DeployAgentInput{AgentID: mine, ChannelID: unconnected.ID}, apierr.KindConflict, "channel_not_connected", "channel_id"},
		{"a type with no connected channel", manage.DeployAgentInput{AgentID: mine, Channel: "telco_voice"}, apierr.KindConflict, "channel_not_connected", "channel"},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			_, err := svc.DeployAgent(ctx, b.ws, tc.in)
			requireAPIError(t, err, tc.kind, tc.code, tc.param)
			require.Zero(t, b.count(t, "deployments"))
		})
	}
	ch, err := b.store.ChannelByID(ctx, b.other, mustUUID(t, theirChannel.ID))
	require.NoError(t, err)
	require.Nil(t, ch.InboundAgent, "the other workspace's channel is untouched")
}

// TestDeployInboundSeat walks the seat rules of one channel: an empty seat is taken, a held
// one stays unless take_over_inbound moves it, and the previous holder stays deployed for
// outbound.
func TestDeployInboundSeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	x := createAgent(t, svc, b.ws, "Agent X")
	y := createAgent(t, svc, b.ws, "Agent Y")
	sms := b.channel(t, b.ws, "sms", "Main line", true)
	chID := mustUUID(t, sms.ID)
	holder := func() *uuid.UUID {
		t.Helper()
		ch, err := b.store.ChannelByID(ctx, b.ws, chID)
		require.NoError(t, err)
		return ch.InboundAgent
	}
	seat := func(inbound bool) []deploymentRow {
		return []deploymentRow{{ChannelType: "sms", ChannelID: &chID, Inbound: inbound, Config: "{}"}}
	}
	none := []deploymentRow{}

	steps := []struct {
		name         string
		agent        string
		takeOver     bool
		wantInbound  bool
		wantReplaced string
		wantNote     bool
		wantHolder   string
		wantX, wantY []deploymentRow
	}{
		{name: "an empty seat is taken", agent: x, wantInbound: true, wantHolder: x, wantX: seat(true), wantY: none},
		{name: "a held seat stays: outbound only", agent: y, wantNote: true, wantHolder: x, wantX: seat(true), wantY: seat(false)},
		{name: "take_over_inbound moves the seat", agent: y, takeOver: true, wantInbound: true, wantReplaced: x, wantHolder: y, wantX: seat(false), wantY: seat(true)},
		{name: "the holder deploying again keeps it", agent: y, wantInbound: true, wantHolder: y, wantX: seat(false), wantY: seat(true)},
		{name: "the previous holder redeploying stays outbound", agent: x, wantNote: true, wantHolder: y, wantX: seat(false), wantY: seat(true)},
	}
	for _, step := range steps {
		res, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: step.agent, ChannelID: sms.ID, TakeOverInbound: step.takeOver})
		require.NoError(t, err, step.name)
		require.Equal(t, step.wantInbound, *res.Inbound, step.name)
		require.Equal(t, "Main line", *res.ChannelName, step.name)
		require.Equal(t, "sms", res.Channel, step.name)
		if step.wantReplaced == "" {
			require.Nil(t, res.ReplacedAgentID, step.name)
		} else {
			require.Equal(t, step.wantReplaced, *res.ReplacedAgentID, step.name)
		}
		require.Equal(t, step.wantNote, res.Note != nil, step.name)
		require.Equal(t, step.wantHolder, holder().String(), step.name)
		require.Equal(t, step.wantX, b.deployments(t, x), step.name)
		require.Equal(t, step.wantY, b.deployments(t, y), step.name)
	}
}

func TestGenerateTestLink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	id := createAgent(t, svc, b.ws, "Linked")

	res, err := svc.GenerateTestLink(ctx, b.ws, manage.TestLinkInput{AgentID: id})
	require.NoError(t, err)
	require.Equal(t, publicURL+"/agents/"+id+"/test", res.TestURL)
	require.Nil(t, res.EmbedURL, "no webchat deployment yet")

	b.channel(t, b.ws, "sms", "Main line", true)
	_, err = svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: "sms"})
	require.NoError(t, err)
	res, err = svc.GenerateTestLink(ctx, b.ws, manage.TestLinkInput{AgentID: id})
	require.NoError(t, err)
	require.Nil(t, res.EmbedURL, "only webchat has an embed script")

	dep, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: "webchat"})
	require.NoError(t, err)
	res, err = svc.GenerateTestLink(ctx, b.ws, manage.TestLinkInput{AgentID: id})
	require.NoError(t, err)
	require.Equal(t, publicURL+"/embed/"+dep.DeploymentID+".js", *res.EmbedURL)
	require.Contains(t, res.Note, *res.EmbedURL)
	deployed, err := b.store.AgentDeployments(ctx, b.ws, mustUUID(t, id))
	require.NoError(t, err)
	require.Equal(t, dep.DeploymentID, deployed["webchat"].String(), "the embed script names the stored deployment")

	_, err = svc.UpdateAgent(ctx, b.ws, manage.UpdateAgentInput{AgentID: id, Updates: map[string]json.RawMessage{"status": json.RawMessage(`"disabled"`)}})
	require.NoError(t, err)
	res, err = svc.GenerateTestLink(ctx, b.ws, manage.TestLinkInput{AgentID: id})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Note, "The agent is disabled"), res.Note)

	_, err = svc.GenerateTestLink(ctx, b.other, manage.TestLinkInput{AgentID: id})
	requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
}

func TestConversationsAndAnalytics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	id := createAgent(t, svc, b.ws, "Busy")
	quiet := createAgent(t, svc, b.ws, "Quiet")
	agentID := mustUUID(t, id)
	var short []string
	for _, labels := range [][]string{{"billing"}, {"billing", "urgent"}, nil} {
		s, err := b.store.CreateAgentConversation(ctx, b.ws, agentID, "webchat", labels)
		require.NoError(t, err)
		short = append(short, s)
	}
	_, err := b.store.CreateAgentConversation(ctx, b.ws, mustUUID(t, quiet), "sms", []string{"billing"})
	require.NoError(t, err)

	t.Run("conversations", func(t *testing.T) {
		t.Parallel()
		all, err := svc.GetConversations(ctx, b.ws, manage.ConversationsInput{AgentID: id})
		require.NoError(t, err)
		require.Equal(t, 3, all.Total)
		var got []string
		for _, c := range all.Conversations {
			got = append(got, c.ID)
			require.Equal(t, "webchat", c.Channel)
			require.NotNil(t, c.Labels)
		}
		require.ElementsMatch(t, short, got, "only this agent's conversations")

		two := 2
		page, err := svc.GetConversations(ctx, b.ws, manage.ConversationsInput{AgentID: id, Limit: &two})
		require.NoError(t, err)
		require.Len(t, page.Conversations, 2)
		require.Equal(t, 3, page.Total, "total counts them all")

		for _, n := range []int{0, 101} {
			_, err := svc.GetConversations(ctx, b.ws, manage.ConversationsInput{AgentID: id, Limit: &n})
			requireAPIError(t, err, apierr.KindInvalid, "invalid_value", "limit")
		}
		_, err = svc.GetConversations(ctx, b.other, manage.ConversationsInput{AgentID: id})
		requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
	})

	t.Run("analytics", func(t *testing.T) {
		t.Parallel()
		res, err := svc.GetAnalytics(ctx, b.ws, manage.AnalyticsInput{AgentID: id})
		require.NoError(t, err)
		require.Equal(t, manage.AnalyticsResult{Success: true, AgentID: id, AgentName: "Busy", TotalConversations: 3,
			LabelCounts: map[string]int{"billing": 2, "urgent": 1}}, res)
		_, err = svc.GetAnalytics(ctx, b.other, manage.AnalyticsInput{AgentID: id})
		requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
	})
}

func TestDeleteAgent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	id := createAgent(t, svc, b.ws, "Doomed")
	keep := createAgent(t, svc, b.ws, "Kept")
	_, err := svc.DeployAgent(ctx, b.ws, manage.DeployAgentInput{AgentID: id, Channel: "webchat"})
	require.NoError(t, err)
	_, err = svc.CrawlWebsite(ctx, b.ws, manage.CrawlWebsiteInput{AgentID: id, URL: "http://127.0.0.1:9/"})
	require.NoError(t, err)

	_, err = svc.DeleteAgent(ctx, b.other, manage.DeleteAgentInput{AgentID: id})
	requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
	_, err = b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
	require.NoError(t, err, "another workspace cannot delete it")

	res, err := svc.DeleteAgent(ctx, b.ws, manage.DeleteAgentInput{AgentID: id})
	require.NoError(t, err)
	require.Equal(t, manage.AgentRef{Success: true, AgentID: id, AgentName: "Doomed"}, res)
	_, err = b.store.AgentByID(ctx, b.ws, mustUUID(t, id))
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, b.deployments(t, id), "its deployments go with it")
	require.Zero(t, b.count(t, "knowledge_sources"), "and its knowledge base")
	_, err = b.store.AgentByID(ctx, b.ws, mustUUID(t, keep))
	require.NoError(t, err, "other agents stay")

	_, err = svc.DeleteAgent(ctx, b.ws, manage.DeleteAgentInput{AgentID: id})
	requireAPIError(t, err, apierr.KindNotFound, "agent_not_found", "agent_id")
}

// TestOperationsDecodeStrictly: the registered operations refuse arguments outside their
// input, and run the typed operation otherwise.
func TestOperationsDecodeStrictly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, b := setup(t)
	ops := map[string]manage.Operation{}
	for _, op := range svc.Operations() {
		ops[op.Name] = op
	}
	_, err := ops["list_agents"].Run(ctx, b.ws, json.RawMessage(`{"colour":"blue"}`))
	requireAPIError(t, err, apierr.KindInvalid, "invalid_arguments", "")
	args, err := json.Marshal(manage.CreateAgentInput{YAML: agentYAML("Via op")})
	require.NoError(t, err)
	out, err := ops["create_agent"].Run(ctx, b.ws, args)
	require.NoError(t, err)
	require.Equal(t, "Via op", out.(manage.CreateAgentResult).AgentName)
	list, err := ops["list_agents"].Run(ctx, b.ws, nil)
	require.NoError(t, err)
	require.Equal(t, 1, list.(manage.ListAgentsResult).Total)
}

// channelRow is a channel stored as package channels stores it.
type channelRow struct{ ID string }

// channel stores a channel of ws, connected or needing setup (the channel layer decides that
// from the carrier; these tests of the deploy rules only need the row).
func (b *testBundle) channel(t *testing.T, ws uuid.UUID, provider, name string, connected bool) channelRow {
	t.Helper()
	w := store.ChannelWrite{ID: store.NewChannelID(), Provider: provider, Name: name, Config: json.RawMessage(`{}`),
		Status: store.ChannelConnected, InboundToken: uuid.NewString()}
	if !connected {
		why := "not connected in this test"
		w.Status, w.Setup = store.ChannelNeedsSetup, &why
	}
	c, err := b.store.CreateChannel(context.Background(), ws, w)
	require.NoError(t, err)
	return channelRow{ID: c.ID.String()}
}
