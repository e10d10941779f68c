package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"switchboard/catalog"
	"switchboard/mailer/mailtest"
)

// handoffAgentYAML is a webchat agent that hands the conversation to a person when asked.
const handoffAgentYAML = `agent:
  name: Parcel Desk
  language: en
  persona:
    display_name: Pia
    tone: friendly
    greeting: Hi, I'm Pia.
  llm:
    provider: gamma
    model: gamma-v4-flash
    temperature: 0.4
    max_tokens: 256
    system_prompt: You help customers of a parcel service.
  channels:
    - type: webchat
  business_rules:
    escalation:
      enabled: true
      trigger: user_request
      action: transfer_to_human
      pickup_timeout_minutes: 10
`

// inboxView is a conversation as the inbox answers it.
type inboxView struct {
	ID       string   `json:"id"`
	Status   string   `json:"status"`
	Channel  string   `json:"channel"`
	Waiting  bool     `json:"waiting"`
	Labels   []string `json:"labels"`
	Assignee *struct {
		ID   *string `json:"id"`
		Name string  `json:"name"`
	} `json:"assignee"`
	Escalation *struct {
		Trigger *string `json:"trigger"`
		Summary *string `json:"summary"`
	} `json:"escalation"`
	Messages []struct {
		Seq    int    `json:"seq"`
		Role   string `json:"role"`
		Text   string `json:"text"`
		Author *struct {
			Name string `json:"name"`
		} `json:"author"`
	} `json:"messages"`
	Notes []struct {
		Text string `json:"text"`
	} `json:"notes"`
}

type inboxPage struct {
	Data      []inboxView `json:"data"`
	HasMore   bool        `json:"has_more"`
	NextAfter *string     `json:"next_after"`
}

// visitor is a webchat visitor of one deployment.
type visitor struct {
	b     *testBundle
	dep   string
	token string
}

func (v *visitor) say(t *testing.T, text string) webchatReply {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"message": text, "visitor_token": v.token})
	resp, raw := v.b.public(t, http.MethodPost, "/embed/"+v.dep+"/chat", "", string(body))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	out := decode[webchatReply](t, raw)
	v.token = out.VisitorToken
	return out
}

// liveFrame is a frame of the visitor's stream.
type liveFrame struct {
	Seq    int    `json:"seq"`
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Author string `json:"author"`
}

// listen opens the visitor's stream; frames arrive on the channel until the test ends.
func (v *visitor) listen(t *testing.T, after string) <-chan liveFrame {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	path := v.b.url + "/embed/" + v.dep + "/stream?visitor_token=" + v.token
	if after != "" {
		path += "&after=" + after
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := embedClient(t).Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := make(chan liveFrame, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var f liveFrame
				if json.Unmarshal([]byte(data), &f) == nil {
					out <- f
				}
			}
		}
	}()
	return out
}

func nextFrame(t *testing.T, frames <-chan liveFrame) liveFrame {
	t.Helper()
	select {
	case f := <-frames:
		return f
	case <-time.After(15 * time.Second):
		t.Fatal("the visitor's stream sent nothing")
		return liveFrame{}
	}
}

func (br *browser) json(t *testing.T, method, path, body string, status int) []byte {
	t.Helper()
	resp, raw := br.do(t, method, path, body)
	require.Equal(t, status, resp.StatusCode, "%s %s: %s", method, path, raw)
	return raw
}

// TestInboxHandoffOverHTTP: a visitor asks for a person; a member finds the conversation in
// the queue, claims it and replies, and the visitor's stream shows "… joined" and the reply
// live; the agent stays silent while the member holds it; notes never reach the visitor or
// the agent; after the release the agent answers again, with the member's reply in its
// history.
func TestInboxHandoffOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	vendor := b.vendors[catalog.Gamma]
	v := &visitor{b: b, dep: dep}

	require.Equal(t, "reply to: Where is my parcel?", v.say(t, "Where is my parcel?").Reply)
	esc := v.say(t, "Can I talk to a real person please?")
	require.Equal(t, "escalated", esc.Status)
	frames := v.listen(t, "")

	member := b.signedIn(t, "member")
	b.setDisplayName(t, member, "Ann")
	queue := decode[inboxPage](t, member.json(t, http.MethodGet, "/api/conversations?status=escalated&assignee=none", "", 200))
	require.Len(t, queue.Data, 1)
	conv := queue.Data[0]
	require.True(t, conv.Waiting)
	require.Equal(t, "webchat", conv.Channel)
	detail := decode[inboxView](t, member.json(t, http.MethodGet, "/api/conversations/"+conv.ID, "", 200))
	require.Equal(t, "user_request", *detail.Escalation.Trigger)
	require.Contains(t, *detail.Escalation.Summary, "Can I talk to a real person please?", "the handoff summary is kept for the person")

	claimed := decode[inboxView](t, member.json(t, http.MethodPost, "/api/conversations/"+conv.ID+"/assign", `{"user_id":"me"}`, 200))
	require.Equal(t, "Ann", claimed.Assignee.Name)
	require.False(t, claimed.Waiting)
	joined := nextFrame(t, frames)
	require.Equal(t, liveFrame{Seq: joined.Seq, Kind: "notice", Text: "Ann joined the conversation", Author: "Ann"}, joined)

	reply := member.json(t, http.MethodPost, "/api/conversations/"+conv.ID+"/messages", `{"text":"Hi, I'm Ann. Your parcel left our depot this morning."}`, 201)
	require.Contains(t, string(reply), `"role":"human"`)
	got := nextFrame(t, frames)
	require.Equal(t, "reply", got.Kind)
	require.Equal(t, "Ann", got.Author)
	require.Equal(t, "Hi, I'm Ann. Your parcel left our depot this morning.", got.Text)

	// A person's reply is a turn.completed with surface "human" and the person's id.
	completed := b.events(t, "turn.completed")
	last := completed[len(completed)-1]
	require.Equal(t, "human", last.Data["surface"])
	require.NotEmpty(t, last.Data["user_id"])
	require.Equal(t, conv.ID, last.Data["conversation_id"])

	// While Ann holds it, the agent is silent: the visitor's message waits for her.
	asked := len(vendor.Requests())
	quiet := v.say(t, "Thanks! When will it arrive?")
	require.Equal(t, "", quiet.Reply)
	require.Len(t, vendor.Requests(), asked, "no model call while a person holds the conversation")

	member.json(t, http.MethodPost, "/api/conversations/"+conv.ID+"/notes", `{"text":"Customer is VIP, waived the fee"}`, 201)
	detail = decode[inboxView](t, member.json(t, http.MethodGet, "/api/conversations/"+conv.ID, "", 200))
	require.Len(t, detail.Notes, 1)
	for _, m := range detail.Messages {
		require.NotContains(t, m.Text, "VIP", "a note is not a message")
	}
	require.Equal(t, "Thanks! When will it arrive?", detail.Messages[len(detail.Messages)-1].Text)

	released := decode[inboxView](t, member.json(t, http.MethodPost, "/api/conversations/"+conv.ID+"/release", "", 200))
	require.Equal(t, "open", released.Status)
	require.Nil(t, released.Assignee)
	left := nextFrame(t, frames)
	require.Equal(t, "Ann left the conversation", left.Text)

	again := v.say(t, "And what are your opening hours?")
	require.Equal(t, "reply to: And what are your opening hours?", again.Reply)
	history := vendor.Requests()[len(vendor.Requests())-1].Messages
	var seen []string
	for _, m := range history {
		seen = append(seen, m.Text)
	}
	joinedHistory := strings.Join(seen, "\n")
	require.Contains(t, joinedHistory, "Your parcel left our depot this morning.", "the agent reads the person's reply")
	require.Contains(t, joinedHistory, "Thanks! When will it arrive?")
	require.NotContains(t, joinedHistory, "VIP", "notes never reach the agent")
	require.NotContains(t, joinedHistory, "joined the conversation", "notices are not the model's history")

	select {
	case f := <-frames:
		require.NotContains(t, f.Text, "VIP", "notes never reach the visitor")
		require.NotEqual(t, "reply to: And what are your opening hours?", f.Text, "the agent's replies come with the visitor's messages")
	case <-time.After(300 * time.Millisecond):
	}

	// The stream resumes after a seq: a reconnecting widget misses nothing.
	replay := v.listen(t, "0")
	require.Equal(t, "Ann joined the conversation", nextFrame(t, replay).Text)
	require.Equal(t, "reply", nextFrame(t, replay).Kind)
}

// deployOn deploys an agent on webchat with a deployment config.
func (b *testBundle) deployOn(t *testing.T, agentID, config string) string {
	t.Helper()
	s := b.mcp(t, b.url, b.key)
	res := s.ok("deploy_agent", map[string]any{"agent_id": agentID, "channel": "webchat", "config": json.RawMessage(config)})
	return res["deploymentId"].(string)
}

func (b *testBundle) setDisplayName(t *testing.T, br *browser, name string) {
	t.Helper()
	br.json(t, http.MethodPatch, "/api/inbox/me", `{"name":"`+name+`"}`, 200)
}

// TestInboxRolesKeysAndWorkspaces: viewers read but cannot take over; a key acts as the
// workspace (it names the person it assigns, and signs its replies with the workspace's
// name); another workspace's conversation is 404; bad input writes nothing.
func TestInboxRolesKeysAndWorkspaces(t *testing.T) {
	t.Parallel()
	b := setup(t)
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	v := &visitor{b: b, dep: dep}
	v.say(t, "Hello")
	v.say(t, "I want to speak to a human")
	page := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations?status=escalated", "", 200))
	require.Len(t, page.Data, 1)
	id := page.Data[0].ID

	viewer := b.signedIn(t, "viewer")
	viewer.json(t, http.MethodGet, "/api/conversations/"+id, "", 200)
	resp, raw := viewer.do(t, http.MethodPost, "/api/conversations/"+id+"/assign", `{"user_id":"me"}`)
	require.Equal(t, "role_not_allowed", errorOf(t, resp, raw, http.StatusForbidden).codeOrEmpty())

	// A key: "me" means nobody; replying to an unheld conversation needs an assignee first.
	resp, raw = b.do(t, http.MethodPost, "/api/conversations/"+id+"/assign", "Bearer "+b.key, `{"user_id":"me"}`)
	require.Equal(t, "session_required", errorOf(t, resp, raw, http.StatusBadRequest).codeOrEmpty())
	resp, raw = b.do(t, http.MethodPost, "/api/conversations/"+id+"/messages", "Bearer "+b.key, `{"text":"Hello from the team"}`)
	require.Equal(t, "conversation_not_assigned", errorOf(t, resp, raw, http.StatusConflict).codeOrEmpty())
	resp, raw = b.do(t, http.MethodPost, "/api/conversations/"+id+"/messages", "Bearer "+b.key, `{"text":"   "}`)
	require.Equal(t, "text", *errorOf(t, resp, raw, http.StatusBadRequest).Param)
	viewerUser, err := b.store.UserByEmail(context.Background(), viewer.email)
	require.NoError(t, err)
	resp, raw = b.do(t, http.MethodPost, "/api/conversations/"+id+"/assign", "Bearer "+b.key, `{"user_id":"`+viewerUser.ID.String()+`"}`)
	require.Equal(t, "assignee_not_allowed", errorOf(t, resp, raw, http.StatusBadRequest).codeOrEmpty())
	require.Len(t, decode[inboxView](t, b.send(t, http.MethodGet, "/api/conversations/"+id, "", 200)).Messages, 5, "refusals wrote nothing")

	member := b.newUser(t, b.workspace, "bo.smith@example.com", "member")
	held := decode[inboxView](t, b.send(t, http.MethodPost, "/api/conversations/"+id+"/assign", `{"user_id":"`+member.ID.String()+`"}`, 200))
	require.Equal(t, "Bo Smith", held.Assignee.Name, "the name defaults to the email's local part")
	mine := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations?assignee="+member.ID.String(), "", 200))
	require.Len(t, mine.Data, 1)
	none := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations?assignee=none", "", 200))
	require.Empty(t, none.Data)
	msg := b.send(t, http.MethodPost, "/api/conversations/"+id+"/messages", `{"text":"Hello from the team"}`, 201)
	require.Contains(t, string(msg), `"name":"acme"`, "a key's reply is signed with the workspace's name")

	other, err := b.store.CreateWorkspace(context.Background(), "globex", 1_000_000_000)
	require.NoError(t, err)
	otherKey := b.newKey(t, other, "owner")
	for _, path := range []string{"/api/conversations/" + id, "/api/conversations/" + id + "/close"} {
		method := http.MethodGet
		if strings.HasSuffix(path, "close") {
			method = http.MethodPost
		}
		resp, raw = b.do(t, method, path, "Bearer "+otherKey, "")
		errorOf(t, resp, raw, http.StatusNotFound)
	}
	require.Empty(t, decode[inboxPage](t, func() []byte {
		resp, raw := b.do(t, http.MethodGet, "/api/conversations", "Bearer "+otherKey, "")
		require.Equal(t, 200, resp.StatusCode)
		return raw
	}()).Data)

	closed := decode[inboxView](t, b.send(t, http.MethodPost, "/api/conversations/"+id+"/close", "", 200))
	require.Equal(t, "closed", closed.Status)
	// The close is announced as a person's line, status closed, once: closing again is no change.
	b.send(t, http.MethodPost, "/api/conversations/"+id+"/close", "", 200)
	var closes []map[string]any
	for _, e := range b.events(t, "turn.completed") {
		if e.Data["status"] == "closed" {
			closes = append(closes, e.Data)
		}
	}
	require.Len(t, closes, 1)
	require.Equal(t, "human", closes[0]["surface"])
	require.Equal(t, id, closes[0]["conversation_id"])
	require.Equal(t, "acme closed the conversation", closes[0]["reply_preview"])
	resp, raw = b.do(t, http.MethodPost, "/api/conversations/"+id+"/messages", "Bearer "+b.key, `{"text":"Still there?"}`)
	require.Equal(t, "conversation_closed", errorOf(t, resp, raw, http.StatusConflict).codeOrEmpty())
}

// TestInboxPickupTimeoutWithAndWithoutAClaim: a conversation claimed before the pickup
// timeout gets no fallback however long the person takes; one nobody claimed tells the
// visitor and asks for contact details, as before.
func TestInboxPickupTimeoutWithAndWithoutAClaim(t *testing.T) {
	t.Parallel()
	clock := newClock(t, "2026-11-23T10:00:00Z")
	b := setup(t, func(o *setupOpts) { o.clock = clock.Now })
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	claimed, unclaimed := &visitor{b: b, dep: dep}, &visitor{b: b, dep: dep}
	for _, v := range []*visitor{claimed, unclaimed} {
		v.say(t, "Hi")
		require.Equal(t, "escalated", v.say(t, "Let me talk to a person").Status)
	}
	member := b.signedIn(t, "member")
	page := decode[inboxPage](t, member.json(t, http.MethodGet, "/api/conversations?status=escalated", "", 200))
	require.Len(t, page.Data, 2)
	// Newest activity first: the second visitor's conversation leads.
	target := page.Data[1].ID
	member.json(t, http.MethodPost, "/api/conversations/"+target+"/assign", `{"user_id":"me"}`, 200)

	clock.Advance(11 * time.Minute)
	require.Equal(t, "", claimed.say(t, "Are you still there?").Reply, "claimed in time: no fallback")
	timedOut := unclaimed.say(t, "Hello? Anyone?")
	require.Contains(t, timedOut.Reply, "nobody from our team is free")
	require.Contains(t, timedOut.Reply, "email address or phone number")

	// Pages: one at a time, by newest activity, without repeats.
	first := decode[inboxPage](t, member.json(t, http.MethodGet, "/api/conversations?limit=1", "", 200))
	require.True(t, first.HasMore)
	second := decode[inboxPage](t, member.json(t, http.MethodGet, "/api/conversations?limit=1&after="+*first.NextAfter, "", 200))
	require.False(t, second.HasMore)
	require.NotEqual(t, first.Data[0].ID, second.Data[0].ID)
	resp, raw := member.do(t, http.MethodGet, "/api/conversations?after=nonsense", "")
	require.Equal(t, "after", *errorOf(t, resp, raw, http.StatusBadRequest).Param)
}

// TestInboxUnclaimedEmail: the members who opted in get one email when an escalated
// conversation waited unclaimed longer than the workspace's setting; the others none.
func TestInboxUnclaimedEmail(t *testing.T) {
	t.Parallel()
	sink := mailtest.New(t)
	clock := newClock(t, "2026-11-23T10:00:00Z")
	b := setup(t, func(o *setupOpts) {
		o.clock, o.smtpURL, o.inboxSweep = clock.Now, sink.URL(), 100*time.Millisecond
	})
	agentID := b.createAgent(t, handoffAgentYAML)
	dep := b.deployOn(t, agentID, `{}`)
	subscriber := b.signedIn(t, "member")
	subscriber.json(t, http.MethodPatch, "/api/inbox/me", `{"notify_unclaimed":true}`, 200)
	b.signedIn(t, "admin") // not opted in
	resp, raw := b.do(t, http.MethodPatch, "/api/inbox/settings", "Bearer "+b.key, `{"notify_after_seconds":10}`)
	require.Equal(t, "notify_after_seconds", *errorOf(t, resp, raw, http.StatusBadRequest).Param)
	settings := b.send(t, http.MethodPatch, "/api/inbox/settings", `{"notify_after_seconds":180}`, 200)
	require.Contains(t, string(settings), `"notify_after_seconds":180`)

	v := &visitor{b: b, dep: dep}
	v.say(t, "Hello")
	v.say(t, "I need a real person")
	require.Contains(t, string(subscriber.json(t, http.MethodGet, "/api/inbox/settings", "", 200)), `"waiting":1`)

	clock.Advance(2 * time.Minute) // within the 3 minutes: nobody is emailed
	time.Sleep(500 * time.Millisecond)
	require.Empty(t, sink.Messages())
	clock.Advance(2 * time.Minute)
	mail := waitMail(t, sink, 1)[0]
	require.Equal(t, []string{subscriber.email}, mail.To)
	require.Contains(t, mail.Subject, "A conversation waits for a person")
	require.Contains(t, mail.Body, "http://switchboard.test/dashboard/inbox?c=mc-")
	require.Contains(t, mail.Body, "I need a real person", "the email carries the handoff summary")

	clock.Advance(10 * time.Minute)
	time.Sleep(500 * time.Millisecond)
	require.Len(t, sink.Messages(), 1, "once per conversation")
}

// TestInboxReplyOnSMSGoesThroughTheCarrier: a person's reply to an SMS conversation is
// texted from the channel's number; the agent stays silent while they hold it.
func TestInboxReplyOnSMSGoesThroughTheCarrier(t *testing.T) {
	t.Parallel()
	w := newSMSWorld(t)
	b := w.b
	resp, _ := w.text(t, ann, "Is my order ready?", "SMinbox0001")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	w.waitReplies(t, ann, 1)
	page := decode[inboxPage](t, b.send(t, http.MethodGet, "/api/conversations?channel=sms", "", 200))
	require.Len(t, page.Data, 1)
	id := page.Data[0].ID

	member := b.signedIn(t, "member")
	b.setDisplayName(t, member, "Ann")
	member.json(t, http.MethodPost, "/api/conversations/"+id+"/messages", `{"text":"It is, come by after 3pm."}`, 201)
	texts := w.waitReplies(t, ann, 2)
	require.Equal(t, "It is, come by after 3pm.", texts[1].Body)
	require.Equal(t, lineNumber, texts[1].From)

	w.text(t, ann, "Great, thanks", "SMinbox0002")
	require.Equal(t, "stored", w.settled(t, "SMinbox0002"), "held by a person: no agent reply")
	require.Len(t, w.repliesTo(ann), 2)
}

// inboxProbes are the role probes of the inbox routes (TestPermissionTableOnEverySurface).
func (b *testBundle) inboxProbes() []probe {
	api := func(method, path, body string) func(*testing.T, string) outcome {
		return func(t *testing.T, key string) outcome { return b.viaHTTP(t, method, path, key, body) }
	}
	missing := "/api/conversations/mc-nosuchconversation"
	return []probe{
		{"listConversations", "viewer", api(http.MethodGet, "/api/conversations", "")},
		{"getConversation", "viewer", api(http.MethodGet, missing, "")},
		{"assignConversation", "member", api(http.MethodPost, missing+"/assign", `{"user_id":null}`)},
		{"replyToConversation", "member", api(http.MethodPost, missing+"/messages", `{"text":"hello"}`)},
		{"addConversationNote", "member", api(http.MethodPost, missing+"/notes", `{"text":"hello"}`)},
		{"releaseConversation", "member", api(http.MethodPost, missing+"/release", "")},
		{"closeConversation", "member", api(http.MethodPost, missing+"/close", "")},
		{"getInboxSettings", "viewer", api(http.MethodGet, "/api/inbox/settings", "")},
		{"updateInboxSettings", "admin", api(http.MethodPatch, "/api/inbox/settings", `{"notify_after_seconds":120}`)},
		{"updateMyInboxPreferences", "member", api(http.MethodPatch, "/api/inbox/me", `{"notify_unclaimed":true}`)},
	}
}
