package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Expressions are CEL (github.com/google/cel-go): typed, side-effect free, with a bounded
// cost. Every expression of a document sees the same variables:
//
//	event         the triggering event's envelope (id, type, workspace_id, created_at, data), or null
//	input         the manual run's input object ({} otherwise)
//	steps         the outputs of the steps that ran, by step id (steps.crm.status)
//	conversation  the run's conversation (id, status, channel, labels), read when the step runs, or null
//	contact       the run's contact (id, name, email, phone), or null
//	run           id, workflow_id
//	now           the current time (a timestamp)
//
// Besides CEL's standard functions and its string extension, two functions are offered:
// to_json(value) writes a value as JSON, and next_local(timestamp, "09:00", "Europe/Paris")
// is the first time at or after the timestamp when that zone's clock shows that time.

// kind is what an expression must produce.
type kind int

const (
	kindBool kind = iota // conditions
	kindTime             // wait until: a timestamp, or an RFC 3339 string
	kindAny              // template parts
)

// costLimit bounds the work of one evaluation (CEL's cost units: about one per operation).
const costLimit = 100_000

// Expr is a compiled expression.
type Expr struct {
	Source string
	prg    cel.Program
}

var (
	envOnce sync.Once
	celEnv  *cel.Env
	envErr  error
)

func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		celEnv, envErr = cel.NewEnv(
			cel.Variable("event", cel.DynType),
			cel.Variable("input", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("steps", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("conversation", cel.DynType),
			cel.Variable("contact", cel.DynType),
			cel.Variable("run", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("now", cel.TimestampType),
			ext.Strings(),
			cel.Function("to_json", cel.Overload("to_json_dyn", []*cel.Type{cel.DynType}, cel.StringType,
				cel.UnaryBinding(toJSON))),
			cel.Function("next_local", cel.Overload("next_local_timestamp_string_string",
				[]*cel.Type{cel.TimestampType, cel.StringType, cel.StringType}, cel.TimestampType,
				cel.FunctionBinding(nextLocal))),
		)
	})
	return celEnv, envErr
}

func compile(src string, want kind) (*Expr, error) {
	if len(src) > maxExpression {
		return nil, fmt.Errorf("the expression is longer than %d characters", maxExpression)
	}
	env, err := environment()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		// The first line; the others draw a caret under the source.
		msg, _, _ := strings.Cut(iss.Err().Error(), "\n")
		return nil, fmt.Errorf("invalid expression: %s", strings.TrimPrefix(msg, "ERROR: <input>:"))
	}
	out := ast.OutputType()
	switch {
	case want == kindBool && !out.IsAssignableType(cel.BoolType):
		return nil, fmt.Errorf("the expression must be true or false; it gives %s", out)
	case want == kindTime && !out.IsAssignableType(cel.TimestampType) && !out.IsAssignableType(cel.StringType):
		return nil, fmt.Errorf("the expression must give a time (a timestamp); it gives %s", out)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("invalid expression: %w", err)
	}
	return &Expr{Source: src, prg: prg}, nil
}

// Vars are the values an expression sees (see the package comment above).
type Vars struct {
	Event        any
	Input        map[string]any
	Steps        map[string]any
	Conversation any
	Contact      any
	Run          map[string]any
	Now          time.Time
}

func (v Vars) activation() map[string]any {
	nonNil := func(m map[string]any) map[string]any {
		if m == nil {
			return map[string]any{}
		}
		return m
	}
	return map[string]any{"event": v.Event, "input": nonNil(v.Input), "steps": nonNil(v.Steps),
		"conversation": v.Conversation, "contact": v.Contact, "run": nonNil(v.Run), "now": v.Now}
}

func (e *Expr) eval(ctx context.Context, v Vars) (ref.Val, error) {
	out, _, err := e.prg.ContextEval(ctx, v.activation())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Source, err)
	}
	return out, nil
}

// Bool evaluates a condition.
func (e *Expr) Bool(ctx context.Context, v Vars) (bool, error) {
	out, err := e.eval(ctx, v)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("%s: gave %s, not true or false", e.Source, out.Type().TypeName())
	}
	return bool(b), nil
}

// Time evaluates a wait's until.
func (e *Expr) Time(ctx context.Context, v Vars) (time.Time, error) {
	out, err := e.eval(ctx, v)
	if err != nil {
		return time.Time{}, err
	}
	switch t := out.Value().(type) {
	case time.Time:
		return t, nil
	case string:
		if parsed, err := time.Parse(time.RFC3339, t); err == nil {
			return parsed, nil
		}
	}
	return time.Time{}, fmt.Errorf("%s: gave %v, not a time", e.Source, out.Value())
}

// text writes a value into a template: strings as they are, null as nothing, numbers and
// booleans as CEL prints them, lists and maps as JSON.
func (e *Expr) text(ctx context.Context, v Vars) (string, error) {
	out, err := e.eval(ctx, v)
	if err != nil {
		return "", err
	}
	switch x := out.(type) {
	case types.String:
		return string(x), nil
	case types.Null:
		return "", nil
	case types.Int, types.Uint, types.Bool:
		return fmt.Sprint(x.Value()), nil
	case types.Double:
		return strconv.FormatFloat(float64(x), 'f', -1, 64), nil
	case types.Timestamp:
		return x.Time.UTC().Format(time.RFC3339), nil
	}
	s := toJSON(out)
	if err, ok := s.(*types.Err); ok {
		return "", fmt.Errorf("%s: %v", e.Source, err)
	}
	return string(s.(types.String)), nil
}

var structValue = reflect.TypeOf(&structpb.Value{})

func toJSON(v ref.Val) ref.Val {
	if ts, ok := v.(types.Timestamp); ok {
		raw, _ := json.Marshal(ts.Time.UTC().Format(time.RFC3339Nano))
		return types.String(raw)
	}
	pb, err := v.ConvertToNative(structValue)
	if err != nil {
		return types.NewErr("to_json: %v", err)
	}
	raw, err := protojson.Marshal(pb.(*structpb.Value))
	if err != nil {
		return types.NewErr("to_json: %v", err)
	}
	// protojson's spacing is deliberately unstable; compact it.
	var buf strings.Builder
	var anyv any
	if json.Unmarshal(raw, &anyv) == nil {
		out, _ := json.Marshal(anyv)
		buf.Write(out)
		return types.String(buf.String())
	}
	return types.String(raw)
}

func nextLocal(args ...ref.Val) ref.Val {
	ts, ok1 := args[0].(types.Timestamp)
	clock, ok2 := args[1].(types.String)
	zone, ok3 := args[2].(types.String)
	if !ok1 || !ok2 || !ok3 {
		return types.NewErr("next_local(timestamp, \"HH:MM\", \"Area/City\")")
	}
	hm, err := time.Parse("15:04", string(clock))
	if err != nil {
		return types.NewErr("next_local: %q is not a time of day such as 09:00", string(clock))
	}
	loc, err := time.LoadLocation(string(zone))
	if err != nil || zone == "Local" {
		return types.NewErr("next_local: %q is not an IANA time zone", string(zone))
	}
	return types.Timestamp{Time: NextLocal(ts.Time, hm.Hour(), hm.Minute(), loc)}
}

// NextLocal is the first time at or after t when loc's clock shows hour:minute.
func NextLocal(t time.Time, hour, minute int, loc *time.Location) time.Time {
	local := t.In(loc)
	at := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
	if at.Before(t) {
		at = time.Date(local.Year(), local.Month(), local.Day()+1, hour, minute, 0, 0, loc)
	}
	return at.UTC()
}

// Template is a string with {{ expression }} parts, each a CEL expression over the same
// variables as conditions. It is the only way a document builds text: there is no other
// function than CEL's own, to_json and next_local.
type Template struct {
	Source string
	parts  []templatePart
}

type templatePart struct {
	text string
	expr *Expr
}

// ParseTemplate compiles every {{ }} part of s.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{Source: s}
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if strings.Contains(rest, "}}") {
				return nil, fmt.Errorf("has a }} without its {{")
			}
			t.parts = append(t.parts, templatePart{text: rest})
			return t, nil
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("has a {{ without its }}")
		}
		src := strings.TrimSpace(rest[i+2 : i+j])
		if src == "" {
			return nil, fmt.Errorf("has an empty {{ }}")
		}
		e, err := compile(src, kindAny)
		if err != nil {
			return nil, fmt.Errorf("in {{ %s }}: %w", src, err)
		}
		t.parts = append(t.parts, templatePart{text: rest[:i]}, templatePart{expr: e})
		rest = rest[i+j+2:]
	}
}

// Render writes the template with v.
func (t *Template) Render(ctx context.Context, v Vars) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.expr == nil {
			b.WriteString(p.text)
			continue
		}
		s, err := p.expr.text(ctx, v)
		if err != nil {
			return "", err
		}
		b.WriteString(s)
	}
	return b.String(), nil
}
