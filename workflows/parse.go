package workflows

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"switchboard/inputguard"
)

// maxNodes bounds the YAML nodes one document may expand to (aliases can make a small
// document expand exponentially).
const maxNodes = 20_000

// Parse decodes and validates a workflow document. When it is invalid, the error is an
// Errors naming every problem with its path and line.
func Parse(data []byte) (*Document, error) {
	if len(data) > MaxSize {
		return nil, Errors{{Message: fmt.Sprintf("the document is %d bytes; the limit is %d", len(data), MaxSize)}}
	}
	root, err := parseYAML(data)
	if err != nil {
		return nil, Errors{*err}
	}
	p := &parser{}
	doc := p.document(root)
	if len(p.errs) > 0 {
		return nil, p.errs.sorted()
	}
	return doc, nil
}

func parseYAML(data []byte) (root *yaml.Node, e *Error) {
	defer func() {
		if r := recover(); r != nil { // yaml.v3 has panicked on malformed input before
			root, e = nil, &Error{Message: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Line: 1, Message: "the document is empty"}
		}
		return nil, syntaxError(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &Error{Line: next.Line, Message: "a workflow is a single YAML document; found another one"}
	} else if !errors.Is(err, io.EOF) {
		return nil, syntaxError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &Error{Line: 1, Message: "the document is empty"}
	}
	return doc.Content[0], nil
}

var yamlErrorLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(err error) *Error {
	if m := yamlErrorLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Message: "invalid YAML: " + m[2]}
	}
	return &Error{Message: "invalid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

// parser walks the YAML tree, collecting every error with its path and line.
type parser struct {
	errs  Errors
	nodes int
}

func (p *parser) add(path string, line int, format string, args ...any) {
	if len(p.errs) < 100 {
		p.errs = append(p.errs, Error{Path: path, Line: line, Message: fmt.Sprintf(format, args...)})
	}
}

// field is a mapping's value with the line of its key.
type field struct {
	node *yaml.Node
	line int
}

// mapping reads a mapping whose keys are among allowed; nil when n is not one.
func (p *parser) mapping(n *yaml.Node, path string, depth int, allowed []string) map[string]field {
	n = p.resolve(n, path, depth)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(path, n.Line, "must be a mapping")
		return nil
	}
	out := map[string]field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kp := join(path, k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			p.add(path, k.Line, "keys must be plain names")
		case allowed != nil && !slices.Contains(allowed, k.Value):
			p.add(kp, k.Line, "is not a known key here (expected one of: %s)", strings.Join(allowed, ", "))
		case out[k.Value].node != nil:
			p.add(kp, k.Line, "is given twice")
		default:
			out[k.Value] = field{node: v, line: k.Line}
		}
	}
	return out
}

// resolve follows an alias and charges the node budget; nil when n must not be read.
func (p *parser) resolve(n *yaml.Node, path string, depth int) *yaml.Node {
	if p.nodes++; p.nodes > maxNodes {
		if p.nodes == maxNodes+1 {
			p.add("", 0, "the document expands to more than %d YAML nodes (through aliases?)", maxNodes)
		}
		return nil
	}
	if depth > inputguard.MaxDepth {
		p.add(path, n.Line, "is nested more than %d levels deep", inputguard.MaxDepth)
		return nil
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil
		}
		return p.resolve(n.Alias, path, depth+1)
	}
	return n
}

// str reads a string scalar; ok false (with an error) when it is not one.
func (p *parser) str(f field, path string) (string, bool) {
	n := p.resolve(f.node, path, 0)
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.add(path, f.line, "must be a string")
		return "", false
	}
	if inputguard.HasNUL(n.Value) {
		p.add(path, f.line, "contains a NUL character, which is not accepted in text")
		return "", false
	}
	return n.Value, true
}

// nonEmpty reads a string that must not be blank.
func (p *parser) nonEmpty(f field, path string) (string, bool) {
	s, ok := p.str(f, path)
	if ok && strings.TrimSpace(s) == "" {
		p.add(path, f.line, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *parser) boolean(f field, path string) (bool, bool) {
	n := p.resolve(f.node, path, 0)
	if n == nil {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		p.add(path, f.line, "must be true or false")
		return false, false
	}
	b, _ := strconv.ParseBool(n.Value)
	return b, true
}

func (p *parser) integer(f field, path string, lo, hi int) (int, bool) {
	n := p.resolve(f.node, path, 0)
	if n == nil {
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil || v < lo || v > hi {
		p.add(path, f.line, "must be a whole number from %d to %d", lo, hi)
		return 0, false
	}
	return v, true
}

// duration reads a Go duration ("90s", "15m", "2h30m") between lo and hi.
func (p *parser) duration(f field, path string, lo, hi time.Duration) (time.Duration, bool) {
	s, ok := p.str(f, path)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		p.add(path, f.line, "must be a duration such as 90s, 15m or 2h30m, from %s to %s", lo, hi)
		return 0, false
	}
	return d, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var stepIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

func (p *parser) document(root *yaml.Node) *Document {
	top := p.mapping(root, "", 0, []string{"name", "description", "enabled", "trigger", "timeout", "steps"})
	if top == nil {
		return nil
	}
	doc := &Document{Enabled: true, Timeout: DefaultTimeout}
	if f, ok := top["name"]; !ok {
		p.add("name", root.Line, "is required")
	} else if s, ok := p.nonEmpty(f, "name"); ok {
		if len(s) > 100 {
			p.add("name", f.line, "must be at most 100 characters")
		}
		doc.Name = strings.TrimSpace(s)
	}
	if f, ok := top["description"]; ok {
		if s, ok := p.str(f, "description"); ok {
			if len(s) > 1000 {
				p.add("description", f.line, "must be at most 1000 characters")
			}
			doc.Description = s
		}
	}
	if f, ok := top["enabled"]; ok {
		doc.Enabled, _ = p.boolean(f, "enabled")
	}
	if f, ok := top["timeout"]; ok {
		doc.Timeout, _ = p.duration(f, "timeout", time.Minute, MaxTimeout)
	}
	if f, ok := top["trigger"]; !ok {
		p.add("trigger", root.Line, "is required")
	} else {
		doc.Trigger = p.trigger(f)
	}
	if f, ok := top["steps"]; !ok {
		p.add("steps", root.Line, "is required")
	} else {
		doc.Steps = p.steps(f)
	}
	return doc
}

func (p *parser) trigger(f field) Trigger {
	var t Trigger
	m := p.mapping(f.node, "trigger", 1, []string{"type", "event", "condition", "cron", "timezone"})
	if m == nil {
		return t
	}
	tf, ok := m["type"]
	if !ok {
		p.add("trigger.type", f.line, "is required (one of: event, schedule, manual)")
		return t
	}
	s, ok := p.str(tf, "trigger.type")
	if !ok {
		return t
	}
	t.Type = TriggerType(s)
	only := map[TriggerType][]string{TriggerEvent: {"event", "condition"}, TriggerSchedule: {"cron", "timezone"}, TriggerManual: nil}
	fields, known := only[t.Type]
	if !known {
		p.add("trigger.type", tf.line, "must be one of: event, schedule, manual")
		return t
	}
	for k, v := range m {
		if k != "type" && !slices.Contains(fields, k) {
			p.add("trigger."+k, v.line, "is only allowed when type is %s", map[string]string{
				"event": "event", "condition": "event", "cron": "schedule", "timezone": "schedule"}[k])
		}
	}
	switch t.Type {
	case TriggerEvent:
		if ef, ok := m["event"]; !ok {
			p.add("trigger.event", tf.line, "is required when type is event (one of: %s)", strings.Join(TriggerEvents(), ", "))
		} else if s, ok := p.str(ef, "trigger.event"); ok {
			if !slices.Contains(TriggerEvents(), s) {
				p.add("trigger.event", ef.line, "must be one of: %s", strings.Join(TriggerEvents(), ", "))
			}
			t.Event = s
		}
		if cf, ok := m["condition"]; ok {
			t.Condition = p.expr(cf, "trigger.condition", kindBool)
		}
	case TriggerSchedule:
		t.Timezone = defaultTimezone
		if zf, ok := m["timezone"]; ok {
			if s, ok := p.nonEmpty(zf, "trigger.timezone"); ok {
				t.Timezone = s
			}
		}
		loc, err := time.LoadLocation(t.Timezone)
		if err != nil || t.Timezone == "Local" {
			p.add("trigger.timezone", m["timezone"].line, "must be an IANA time zone such as Europe/Paris")
			loc = time.UTC
		}
		t.location = loc
		if cf, ok := m["cron"]; !ok {
			p.add("trigger.cron", tf.line, "is required when type is schedule (five fields: minute hour day-of-month month day-of-week)")
		} else if s, ok := p.nonEmpty(cf, "trigger.cron"); ok {
			sched, err := cronParser.Parse(s)
			if err != nil || strings.HasPrefix(strings.TrimSpace(s), "@every") {
				p.add("trigger.cron", cf.line, "is not a cron expression (five fields: minute hour day-of-month month day-of-week, or @daily, @hourly...)")
			} else {
				t.Cron, t.schedule = s, sched
			}
		}
	}
	return t
}

func (p *parser) steps(f field) []Step {
	n := p.resolve(f.node, "steps", 1)
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.add("steps", f.line, "must be a list of steps")
		return nil
	}
	switch {
	case len(n.Content) == 0:
		p.add("steps", f.line, "must have at least one step")
	case len(n.Content) > MaxSteps:
		p.add("steps", f.line, "has %d steps; the limit is %d", len(n.Content), MaxSteps)
		return nil
	}
	steps := make([]Step, 0, len(n.Content))
	seen := map[string]int{}
	for i, item := range n.Content {
		path := fmt.Sprintf("steps[%d]", i)
		s := p.step(item, path)
		if s.ID != "" {
			if j, dup := seen[s.ID]; dup {
				p.add(path+".id", item.Line, "%q is already the id of steps[%d]", s.ID, j)
			}
			seen[s.ID] = i
		}
		steps = append(steps, s)
	}
	// An if may only skip forward: a run always ends.
	for i, s := range steps {
		if s.Type != StepIf || s.Else == "" || s.Else == EndOfRun {
			continue
		}
		if j, ok := seen[s.Else]; !ok || j <= i {
			p.add(fmt.Sprintf("steps[%d].else", i), s.elseLine, "must be the id of a later step, or end")
		}
	}
	return steps
}

func (p *parser) step(item *yaml.Node, path string) Step {
	var s Step
	all := []string{"id", "type", "retries"}
	for _, fs := range stepFields {
		all = append(all, fs...)
	}
	slices.Sort(all)
	m := p.mapping(item, path, 2, slices.Compact(all))
	if m == nil {
		return s
	}
	if f, ok := m["id"]; !ok {
		p.add(path+".id", item.Line, "is required")
	} else if id, ok := p.str(f, path+".id"); ok {
		if !stepIDPattern.MatchString(id) || id == EndOfRun {
			p.add(path+".id", f.line, "must be a lowercase name (letters, digits, _; at most 40) other than end")
		} else {
			s.ID = id
		}
	}
	tf, ok := m["type"]
	if !ok {
		p.add(path+".type", item.Line, "is required (one of: %s)", strings.Join(stepTypeNames(), ", "))
		return s
	}
	t, ok := p.str(tf, path+".type")
	if !ok {
		return s
	}
	s.Type = StepType(t)
	fields, known := stepFields[s.Type]
	if !known {
		p.add(path+".type", tf.line, "must be one of: %s", strings.Join(stepTypeNames(), ", "))
		return s
	}
	for k, v := range m {
		if k != "id" && k != "type" && k != "retries" && !slices.Contains(fields, k) {
			p.add(path+"."+k, v.line, "is not a field of a %s step (its fields: %s)", s.Type, strings.Join(fields, ", "))
		}
	}
	for _, k := range requiredFields[s.Type] {
		if _, ok := m[k]; !ok {
			p.add(path+"."+k, item.Line, "is required for a %s step", s.Type)
		}
	}
	s.Retries = DefaultRetries
	if !s.Type.sideEffecting() {
		s.Retries = 0
	}
	if f, ok := m["retries"]; ok {
		if !s.Type.sideEffecting() {
			p.add(path+".retries", f.line, "is only allowed on steps that reach outside the run (http_request, send_message, email, agent_prompt)")
		} else {
			s.Retries, _ = p.integer(f, path+".retries", 0, MaxRetries)
		}
	}
	p.stepFields(&s, m, path, item.Line)
	return s
}

func stepTypeNames() []string {
	out := []string{}
	for _, t := range StepTypes() {
		out = append(out, string(t))
	}
	return out
}

// stepFields reads the fields of s's type.
func (p *parser) stepFields(s *Step, m map[string]field, path string, line int) {
	tmpl := func(k string) *Template {
		if f, ok := m[k]; ok {
			return p.template(f, path+"."+k)
		}
		return nil
	}
	switch s.Type {
	case StepIf:
		if f, ok := m["condition"]; ok {
			s.Condition = p.expr(f, path+".condition", kindBool)
		}
		s.Else = EndOfRun
		if f, ok := m["else"]; ok {
			s.Else, _ = p.nonEmpty(f, path+".else")
			s.elseLine = f.line
		}
	case StepWait:
		df, hasD := m["duration"]
		uf, hasU := m["until"]
		switch {
		case hasD == hasU:
			p.add(path, line, "a wait step takes either duration or until")
		case hasD:
			s.Duration, _ = p.duration(df, path+".duration", time.Second, MaxTimeout)
		default:
			s.Until = p.expr(uf, path+".until", kindTime)
		}
	case StepHTTPRequest:
		s.Method = "POST"
		if f, ok := m["method"]; ok {
			if v, ok := p.str(f, path+".method"); ok {
				if s.Method = strings.ToUpper(v); !slices.Contains(httpMethods, s.Method) {
					p.add(path+".method", f.line, "must be one of: %s", strings.Join(httpMethods, ", "))
				}
			}
		}
		s.URL, s.Body = tmpl("url"), tmpl("body")
		if f, ok := m["headers"]; ok {
			s.Headers = p.templateMap(f, path+".headers", nil)
		}
	case StepSendMessage:
		if f, ok := m["channel"]; ok {
			if v, ok := p.str(f, path+".channel"); ok {
				if s.Channel = v; !slices.Contains(MessageChannels, v) {
					p.add(path+".channel", f.line, "must be one of %s", strings.Join(MessageChannels, ", "))
				}
			}
		}
		s.Body, s.Subject = tmpl("body"), tmpl("subject")
	case StepApplyLabel:
		s.Label = tmpl("label")
	case StepUpdateContact:
		if f, ok := m["set"]; ok {
			s.Set = p.templateMap(f, path+".set", contactFields)
			if s.Set != nil && len(s.Set) == 0 {
				p.add(path+".set", f.line, "must set at least one of: %s", strings.Join(contactFields, ", "))
			}
		}
	case StepAgentPrompt:
		s.Prompt = tmpl("prompt")
		if f, ok := m["model"]; ok {
			s.Model, _ = p.nonEmpty(f, path+".model")
			s.modelLine = f.line
		}
	case StepEmail:
		s.To, s.Subject, s.Body = tmpl("to"), tmpl("subject"), tmpl("body")
	}
}

// templateMap reads a mapping of names to templates (headers, contact fields).
func (p *parser) templateMap(f field, path string, allowed []string) map[string]*Template {
	m := p.mapping(f.node, path, 3, allowed)
	if m == nil {
		return nil
	}
	out := map[string]*Template{}
	for k, v := range m {
		if t := p.template(v, path+"."+k); t != nil {
			out[k] = t
		}
	}
	return out
}

func (p *parser) template(f field, path string) *Template {
	s, ok := p.str(f, path)
	if !ok {
		return nil
	}
	t, err := ParseTemplate(s)
	if err != nil {
		p.add(path, f.line, "%v", err)
		return nil
	}
	return t
}

func (p *parser) expr(f field, path string, want kind) *Expr {
	s, ok := p.nonEmpty(f, path)
	if !ok {
		return nil
	}
	e, err := compile(s, want)
	if err != nil {
		p.add(path, f.line, "%v", err)
		return nil
	}
	return e
}
