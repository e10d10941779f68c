package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"switchboard/apierr"
	"switchboard/inbox"
	"switchboard/llm"
	"switchboard/mailer"
	"switchboard/money"
	"switchboard/quota"
	"switchboard/store"
)

// Models gives the model client of a vendor family (llm.Registry).
type Models interface {
	For(family string) (llm.Client, error)
}

// SMSQueue queues a text to an SMS conversation's texter: a pending outbound message and its
// send job, in the transaction that records the step (channels' SMS deliverer), so a step
// recorded is sent once and a step not recorded sends nothing.
type SMSQueue interface {
	Deliver(ctx context.Context, tx *store.Tx, d inbox.Delivery) error
}

// maxResponseBody is how much of an http_request's response the run keeps.
const maxResponseBody = 64 << 10

// execute runs one step. It changes nothing in the database itself: what it changes there
// is in result.effect, committed with the step's result.
func (s *Service) execute(ctx context.Context, st *runState, step Step, rec store.WorkflowRunStep, v Vars) result {
	res := result{next: -1}
	fail := func(err error) result { res.err = err; return res }
	switch step.Type {
	case StepIf:
		ok, err := step.Condition.Bool(ctx, v)
		if err != nil {
			return fail(err)
		}
		res.output = map[string]any{"result": ok}
		if !ok {
			res.next = len(st.doc.Steps)
			for j, other := range st.doc.Steps {
				if other.ID == step.Else {
					res.next = j
				}
			}
			for j := st.run.NextStep + 1; j < res.next; j++ {
				res.skipped = append(res.skipped, j)
			}
		}
		return res
	case StepWait:
		return s.wait(ctx, step, rec, v)
	case StepHTTPRequest:
		return s.httpRequest(ctx, st, step, v)
	case StepApplyLabel:
		label, err := step.Label.Render(ctx, v)
		if err != nil {
			return fail(err)
		}
		label = strings.TrimSpace(label)
		if label == "" || len(label) > 64 {
			return fail(fmt.Errorf("the label must be 1 to 64 characters; it is %q", label))
		}
		conv := st.run.ConversationID
		if conv == nil {
			return fail(errors.New("the run has no conversation to label"))
		}
		res.output = map[string]any{"label": label}
		res.effect = func(tx *store.Tx) error {
			_, err := tx.AddConversationLabel(ctx, st.run.WorkspaceID, *conv, label)
			return err
		}
		return res
	case StepUpdateContact:
		return s.updateContact(ctx, st, step, v)
	case StepAgentPrompt:
		return s.agentPrompt(ctx, st, step, v)
	case StepEmail:
		return s.email(ctx, st, step, v)
	case StepSendMessage:
		return s.sendMessage(ctx, st, step, v)
	}
	return fail(fmt.Errorf("unknown step type %q", step.Type))
}

// wait ends when its time comes; the first time it runs it records that time (an until read
// again later could move).
func (s *Service) wait(ctx context.Context, step Step, rec store.WorkflowRunStep, v Vars) result {
	res := result{next: -1}
	var until time.Time
	var out struct {
		Until time.Time `json:"until"`
	}
	switch {
	case rec.Status == "waiting" && json.Unmarshal(rec.Output, &out) == nil:
		until = out.Until
	case step.Until != nil:
		t, err := step.Until.Time(ctx, v)
		if err != nil {
			res.err = err
			return res
		}
		until = t
	default:
		until = v.Now.Add(step.Duration)
	}
	res.output = map[string]any{"until": until.UTC()}
	if v.Now.Before(until) {
		res.waitUntil = until
	}
	return res
}

func (s *Service) httpRequest(ctx context.Context, st *runState, step Step, v Vars) result {
	res := result{next: -1}
	url, err := step.URL.Render(ctx, v)
	if err == nil {
		err = s.cfg.Guard.CheckURL(ctx, url)
	}
	if err != nil {
		res.err = err
		return res
	}
	body, err := step.Body.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	var reader io.Reader
	if body != "" {
		reader = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, step.Method, url, reader)
	if err != nil {
		res.err = err
		return res
	}
	for name, t := range step.Headers {
		val, err := t.Render(ctx, v)
		if err != nil {
			res.err = err
			return res
		}
		req.Header.Set(name, val)
	}
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", contentType(body))
	}
	req.Header.Set("Idempotency-Key", IdempotencyKey(st.run.ShortID, step.ID))
	req.Header.Set("User-Agent", "Switchboard-Workflows/1")
	resp, err := s.client.Do(req)
	if err != nil {
		res.err, res.transient = fmt.Errorf("%s %s: %w", step.Method, url, err), true
		return res
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	out := map[string]any{"status": resp.StatusCode, "body": string(raw)}
	var parsed any
	if json.Unmarshal(raw, &parsed) == nil {
		out["json"] = parsed
	}
	res.output = out
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		res.err, res.transient = fmt.Errorf("%s %s answered %d", step.Method, url, resp.StatusCode), true
	case resp.StatusCode >= 400:
		res.err = fmt.Errorf("%s %s answered %d", step.Method, url, resp.StatusCode)
	}
	return res
}

func contentType(body string) string {
	if json.Valid([]byte(body)) {
		return "application/json"
	}
	return "text/plain; charset=utf-8"
}

func (s *Service) updateContact(ctx context.Context, st *runState, step Step, v Vars) result {
	res := result{next: -1}
	if st.run.ContactID == nil {
		res.err = errors.New("the run has no contact to update")
		return res
	}
	var f store.ContactFields
	out := map[string]any{}
	for _, name := range contactFields {
		t, ok := step.Set[name]
		if !ok {
			continue
		}
		val, err := t.Render(ctx, v)
		if err != nil {
			res.err = err
			return res
		}
		if val = strings.TrimSpace(val); val == "" || len(val) > 200 {
			res.err = fmt.Errorf("set.%s must be 1 to 200 characters; it is %q", name, val)
			return res
		}
		out[name] = val
		switch name {
		case "name":
			f.Name = &val
		case "email":
			f.Email = &val
		case "phone":
			f.Phone = &val
		}
	}
	res.output = out
	id := *st.run.ContactID
	res.effect = func(tx *store.Tx) error { return tx.UpdateContactFields(ctx, st.run.WorkspaceID, id, f) }
	return res
}

// agentPrompt makes one model call over the run's conversation, metered like a turn (a
// ledger row and spend.recorded, committed with the step). A workspace that may not spend
// fails the step with the reason, before any call.
func (s *Service) agentPrompt(ctx context.Context, st *runState, step Step, v Vars) result {
	res := result{next: -1}
	ws := st.run.WorkspaceID
	w, err := s.store.WorkspaceByID(ctx, ws)
	if err != nil {
		res.err, res.transient = err, true
		return res
	}
	if refused := quota.Check(quota.OfWorkspace(w), true, v.Now); refused != nil {
		res.err = fmt.Errorf("%s: %s", refused.Reason, refused.Message)
		return res
	}
	model, ok := s.cfg.Catalog.Lookup(step.Model)
	if !ok {
		res.err = fmt.Errorf("model %q is not in the catalog", step.Model)
		return res
	}
	if s.cfg.Models == nil {
		res.err = errors.New("no model vendor is configured")
		return res
	}
	client, err := s.cfg.Models.For(string(model.Family))
	if err != nil {
		res.err = fmt.Errorf("model %s: %w", step.Model, err)
		return res
	}
	prompt, err := step.Prompt.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	msgs, err := s.transcript(ctx, st)
	if err != nil {
		res.err, res.transient = err, true
		return res
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: prompt})
	out, err := client.Generate(ctx, llm.Request{Model: model.Upstream, Messages: msgs,
		System: "You are a careful assistant working on a business's conversation with a customer. Answer the request in the last message."}, nil)
	cost := model.CostNanoUSD(out.Usage.InputTokens, out.Usage.OutputTokens)
	if cost > 0 || out.Usage.InputTokens > 0 || out.Usage.OutputTokens > 0 {
		res.charge = &store.Charge{AmountNanoUSD: cost, Category: "model_usage", Model: model.ID,
			InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens, ConversationID: st.run.ConversationID}
		res.spendData = func(balance int64) any {
			d := map[string]any{"amount_usd": json.Number(money.FormatUSD(cost)), "balance_usd": json.Number(money.FormatUSD(balance)),
				"category": "model_usage"}
			if conv, ok := v.Conversation.(map[string]any); ok {
				d["conversation_id"] = conv["id"]
			}
			return d
		}
	}
	if err != nil {
		var le *llm.Error
		res.err = err
		res.transient = errors.As(err, &le) && slices.Contains([]llm.ErrorKind{llm.ErrTimeout, llm.ErrRateLimited, llm.ErrUpstream}, le.Kind)
		if le != nil {
			res.err = fmt.Errorf("%s: %s", le.Kind, le.Message)
		}
		// What the failed call used is still charged; it commits with the failure.
		return res
	}
	res.output = map[string]any{"text": out.Text, "model": model.ID, "input_tokens": out.Usage.InputTokens,
		"output_tokens": out.Usage.OutputTokens, "cost_usd": json.Number(money.FormatUSD(cost))}
	return res
}

// transcript is the run's conversation as model messages (none without a conversation).
func (s *Service) transcript(ctx context.Context, st *runState) ([]llm.Message, error) {
	if st.run.ConversationID == nil {
		return nil, nil
	}
	msgs, err := s.store.ConversationTranscript(ctx, st.run.WorkspaceID, *st.run.ConversationID)
	if err != nil {
		return nil, err
	}
	var out []llm.Message
	var b strings.Builder
	b.WriteString("The conversation so far:\n")
	for _, m := range msgs {
		if m.Notice {
			continue
		}
		who := "Customer"
		if m.Role == "assistant" {
			who = "Agent"
		}
		fmt.Fprintf(&b, "%s: %s\n", who, m.Content)
	}
	if len(msgs) > 0 {
		out = append(out, llm.Message{Role: llm.RoleUser, Text: b.String()}, llm.Message{Role: llm.RoleAssistant, Text: "I have read it."})
	}
	return out, nil
}

func (s *Service) email(ctx context.Context, st *runState, step Step, v Vars) result {
	res := result{next: -1}
	to, err := step.To.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	return s.mail(ctx, st, step, v, splitAddresses(to))
}

func splitAddresses(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// mail sends one email through SMTP_URL. A refused recipient or a missing SMTP_URL fails
// the step; anything else (the server unreachable, a temporary refusal) is tried again.
func (s *Service) mail(ctx context.Context, st *runState, step Step, v Vars, to []string) result {
	res := result{next: -1}
	subject, err := step.Subject.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	body, err := step.Body.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	if subject == "" {
		subject = "A message from " + st.run.WorkflowShortID
	}
	// The idempotency key is the Message-ID: a step resumed after SMTP accepted the message
	// sends the same message again, which mail systems that discard duplicates drop.
	key := IdempotencyKey(st.run.ShortID, step.ID)
	err = s.cfg.Mailer.Send(ctx, mailer.Message{To: to, Subject: subject, Body: body, ID: key})
	res.output = map[string]any{"to": to, "subject": subject, "idempotency_key": key}
	if err != nil {
		res.err = err
		res.transient = !errors.Is(err, mailer.ErrNotConfigured) && !strings.Contains(err.Error(), "is not an email address") &&
			!strings.Contains(err.Error(), "no recipient")
	}
	return res
}

// sendMessage sends to the run's contact: on sms, in the run's SMS conversation (queued
// with the step's result); on email, to the contact's address.
func (s *Service) sendMessage(ctx context.Context, st *runState, step Step, v Vars) result {
	res := result{next: -1}
	if step.Channel == "email" {
		c, _ := v.Contact.(map[string]any)
		addr, _ := c["email"].(string)
		if addr == "" {
			res.err = errors.New("the run's contact has no email address")
			return res
		}
		return s.mail(ctx, st, step, v, []string{addr})
	}
	text, err := step.Body.Render(ctx, v)
	if err != nil {
		res.err = err
		return res
	}
	if strings.TrimSpace(text) == "" {
		res.err = errors.New("the message is empty")
		return res
	}
	conv, _ := v.Conversation.(map[string]any)
	if st.run.ConversationID == nil || conv == nil || conv["channel"] != step.Channel {
		res.err = fmt.Errorf("the run has no %s conversation to write in (send_message on %s answers in the run's conversation on that channel)", step.Channel, step.Channel)
		return res
	}
	if s.cfg.SMS == nil {
		res.err = errors.New("this server sends on no channel")
		return res
	}
	ws, convID, short := st.run.WorkspaceID, *st.run.ConversationID, conv["id"].(string)
	res.output = map[string]any{"channel": step.Channel, "text": text}
	res.effect = func(tx *store.Tx) error {
		err := s.cfg.SMS.Deliver(ctx, tx, inbox.Delivery{WorkspaceID: ws, ConversationID: convID, ShortID: short, Channel: step.Channel, Text: text})
		if e := apierr.As(err); e != nil && e.Kind == apierr.KindConflict {
			return stepRefused{err: e}
		}
		return err
	}
	return res
}

// stepRefused is an effect the step's target refused (an SMS recipient who opted out): the
// step fails instead of the run being tried again.
type stepRefused struct{ err *apierr.Error }

func (e stepRefused) Error() string { return e.err.Message }
