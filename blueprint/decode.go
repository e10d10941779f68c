package blueprint

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"switchboard/inputguard"
)

// Bounds on the work one document can cause. A blueprint is a few hundred nodes; aliases can
// make a small document expand exponentially ("billion laughs") or refer to themselves.
const (
	maxNodes = 100_000             // nodes visited, counting each alias expansion again
	maxDepth = inputguard.MaxDepth // nesting of mappings and lists, as for JSON requests
)

// parseYAML reads the single YAML document in data. A nil root means an empty document.
func parseYAML(data []byte) (root *yaml.Node, errs Errors) {
	defer func() {
		// yaml.v3 has panicked on malformed input before (CVE-2022-28948); never let a
		// blueprint take the process down.
		if r := recover(); r != nil {
			root, errs = nil, Errors{{Message: fmt.Sprintf("invalid YAML: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, Errors{syntaxError(err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return nil, Errors{{Line: line, Message: "a blueprint is a single YAML document; found another one"}}
	case !errors.Is(err, io.EOF):
		return nil, Errors{syntaxError(err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

var yamlErrorLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(err error) Error {
	msg := err.Error()
	if m := yamlErrorLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg := "invalid YAML: " + m[2]
		if m[2] == "mapping values are not allowed in this context" {
			msg += ` (quote a value that contains ": ")`
		}
		return Error{Line: line, Message: msg}
	}
	return Error{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// decoder fills the typed structs from a yaml.Node tree. It records the line of every path it
// meets and collects every error instead of stopping at the first.
type decoder struct {
	errs    Errors
	dropped int             // errors past maxErrors
	lines   map[string]int  // path -> line of its key, or of the item for list items
	failed  map[string]bool // paths with an error; later errors at or below them are dropped
	nodes   int
	aborted bool
}

// maxErrors bounds the list Parse returns; a document with more problems is not a blueprint
// someone is fixing line by line.
const maxErrors = 100

func newDecoder() *decoder {
	return &decoder{lines: map[string]int{"": 1}, failed: map[string]bool{}}
}

// add records an error unless an earlier one covers the same path or an ancestor: a
// persona that is not a mapping should not also yield "display_name is required".
func (d *decoder) add(path string, line int, msg string) {
	for p := path; ; p = parent(p) {
		if d.failed[p] {
			return
		}
		if p == "" {
			break
		}
	}
	d.failed[path] = true
	if len(d.errs) >= maxErrors {
		d.dropped++
		return
	}
	d.errs = append(d.errs, Error{Path: path, Line: line, Message: msg})
}

// failedBelow reports whether a path strictly below path has an error.
func (d *decoder) failedBelow(path string) bool {
	for f := range d.failed {
		if len(f) > len(path) && strings.HasPrefix(f, path) && (f[len(path)] == '.' || f[len(path)] == '[') {
			return true
		}
	}
	return false
}

// lineOf is the line of path, or of its nearest ancestor that has one.
func (d *decoder) lineOf(path string) int {
	for {
		if line, ok := d.lines[path]; ok {
			return line
		}
		if path == "" {
			return 0
		}
		path = parent(path)
	}
}

func parent(path string) string {
	if i := strings.LastIndexByte(path, '['); i >= 0 && strings.HasSuffix(path, "]") {
		return path[:i]
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decodeRoot(root *yaml.Node, bp *Blueprint) {
	if root == nil {
		return
	}
	d.lines[""] = root.Line
	d.decode(root, "", 0, reflect.ValueOf(bp).Elem())
}

var supportedTags = map[string]bool{
	"!!map": true, "!!seq": true, "!!str": true, "!!int": true, "!!float": true,
	"!!bool": true, "!!null": true, "!!timestamp": true, "!!binary": true,
}

// enter charges n against the node budget and the depth limit, follows an alias and rejects
// unsupported tags. It returns nil when n must not be decoded.
func (d *decoder) enter(n *yaml.Node, path string, depth int) *yaml.Node {
	if d.aborted {
		return nil
	}
	if d.nodes++; d.nodes > maxNodes {
		d.aborted = true
		d.errs = Errors{{Message: fmt.Sprintf("blueprint expands to more than %d YAML nodes (through aliases?)", maxNodes)}}
		return nil
	}
	if depth > maxDepth {
		d.add(path, d.lineOf(path), fmt.Sprintf("is nested more than %d levels deep", maxDepth))
		return nil
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			d.add(path, d.lineOf(path), "is an alias to nothing")
			return nil
		}
		n = n.Alias
	}
	if tag := n.ShortTag(); !supportedTags[tag] {
		d.add(path, d.lineOf(path), "unsupported YAML tag "+tag)
		return nil
	}
	if n.Kind == yaml.ScalarNode && inputguard.HasNUL(n.Value) {
		d.add(path, d.lineOf(path), nulMessage)
		return nil
	}
	return n
}

// nulMessage refuses U+0000 (a double-quoted "\0"), which PostgreSQL refuses in text.
const nulMessage = "contains a NUL character (\\0), which is not accepted in text"

// key reads the key node of a mapping entry.
func (d *decoder) key(n *yaml.Node, path string) (name string, line int, ok bool) {
	line = n.Line
	if d.aborted {
		return "", line, false
	}
	if d.nodes++; d.nodes > maxNodes {
		d.enter(n, path, 0) // records the abort
		return "", line, false
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		d.add(path, line, "keys must be strings")
		return "", line, false
	}
	if inputguard.HasNUL(n.Value) {
		d.add(path, line, "a key "+nulMessage)
		return "", line, false
	}
	if n.ShortTag() == "!!merge" {
		// Kept as an ordinary key, which no mapping of the format has.
		d.add(join(path, n.Value), line, "merge keys (<<) are not supported")
	}
	return n.Value, line, true
}

// decode stores n into v, reporting errors under path. It reports whether v was set.
func (d *decoder) decode(n *yaml.Node, path string, depth int, v reflect.Value) bool {
	if n = d.enter(n, path, depth); n == nil {
		return false
	}
	if v.Kind() != reflect.Pointer {
		return d.decodeValue(n, path, depth, v)
	}
	if n.ShortTag() == "!!null" {
		if v.Type() == reflect.TypeFor[*Hours]() {
			v.SetZero() // a closed day
			return true
		}
		return d.typeError(path, n, v.Type().Elem())
	}
	p := reflect.New(v.Type().Elem())
	if !d.decodeValue(n, path, depth, p.Elem()) {
		return false
	}
	v.Set(p)
	return true
}

func (d *decoder) decodeValue(n *yaml.Node, path string, depth int, v reflect.Value) bool {
	tag := n.ShortTag()
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.typeError(path, n, v.Type())
		}
		d.decodeStruct(n, path, depth, v)
		return true
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.typeError(path, n, v.Type())
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			d.lines[ip] = item.Line
			d.decode(item, ip, depth+1, s.Index(i))
		}
		v.Set(s)
		return true
	case reflect.Map: // config: free-form
		if n.Kind != yaml.MappingNode {
			return d.typeError(path, n, v.Type())
		}
		v.Set(reflect.ValueOf(d.mapping(n, path, depth)))
		return true
	case reflect.String:
		if n.Kind != yaml.ScalarNode || !isStringTag(tag) {
			return d.typeError(path, n, v.Type())
		}
		if n.Value == "" {
			d.add(path, d.lineOf(path), "must not be empty")
			return false
		}
		v.SetString(n.Value)
		return true
	case reflect.Bool:
		var b bool
		if tag != "!!bool" || n.Decode(&b) != nil {
			return d.typeError(path, n, v.Type())
		}
		v.SetBool(b)
		return true
	case reflect.Int:
		f, ok := d.number(n, path, v.Type())
		if !ok {
			return false
		}
		if f != math.Trunc(f) {
			d.add(path, d.lineOf(path), "must be a whole number, got "+n.Value)
			return false
		}
		// Out-of-range values are clamped so that the range check reports them.
		v.SetInt(int64(max(math.MinInt32, min(math.MaxInt32, f))))
		return true
	case reflect.Float64:
		f, ok := d.number(n, path, v.Type())
		if !ok {
			return false
		}
		v.SetFloat(f)
		return true
	}
	panic(fmt.Sprintf("blueprint: no decoding for %s", v.Type()))
}

func isStringTag(tag string) bool {
	// An unquoted date is a !!timestamp to YAML; as a string its text is kept.
	return tag == "!!str" || tag == "!!timestamp" || tag == "!!binary"
}

// number reads a finite !!int or !!float scalar for a field of type t.
func (d *decoder) number(n *yaml.Node, path string, t reflect.Type) (float64, bool) {
	if tag := n.ShortTag(); n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		return 0, d.typeError(path, n, t)
	}
	switch x := d.scalar(n, path).(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// decodeStruct fills the fields of v, named by their yaml tags, from mapping n.
func (d *decoder) decodeStruct(n *yaml.Node, path string, depth int, v reflect.Value) {
	if s, ok := v.Addr().Interface().(interface{ setDefaults() }); ok {
		s.setDefaults()
	}
	t := v.Type()
	var names []string
	index := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		names = append(names, name)
		index[name] = i
	}
	d.entries(n, path, func(name, kp string, line int, value *yaml.Node) {
		field, known := index[name]
		if !known {
			d.add(kp, line, "unknown field; expected one of "+strings.Join(names, ", "))
			return
		}
		d.decode(value, kp, depth+1, v.Field(field))
	})
}

// entries walks the keys of a mapping node in order, reporting duplicate keys and keeping
// each key's line, and calls fn for every first occurrence.
func (d *decoder) entries(n *yaml.Node, path string, fn func(name, keyPath string, line int, value *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, line, ok := d.key(n.Content[i], path)
		if !ok {
			continue
		}
		kp := join(path, name)
		if first, dup := seen[name]; dup {
			d.add(kp, line, fmt.Sprintf("duplicate key; first given on line %d", first))
			continue
		}
		seen[name] = line
		d.lines[kp] = line
		fn(name, kp, line, n.Content[i+1])
	}
}

// value converts a node of free-form data (a config object) to the values encoding/json
// understands: map[string]any, []any, string, int64, uint64, float64, bool and nil.
func (d *decoder) value(n *yaml.Node, path string, depth int) any {
	if n = d.enter(n, path, depth); n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.mapping(n, path, depth)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", path, i)
			d.lines[ip] = item.Line
			out[i] = d.value(item, ip, depth+1)
		}
		return out
	}
	return d.scalar(n, path)
}

func (d *decoder) mapping(n *yaml.Node, path string, depth int) map[string]any {
	out := make(map[string]any, len(n.Content)/2)
	d.entries(n, path, func(name, kp string, _ int, value *yaml.Node) {
		out[name] = d.value(value, kp, depth+1)
	})
	return out
}

// scalar converts a scalar node; numbers that JSON cannot hold (NaN, infinities) are errors.
func (d *decoder) scalar(n *yaml.Node, path string) any {
	var err error
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		var b bool
		if err = n.Decode(&b); err == nil {
			return b
		}
	case "!!int":
		var x any
		if err = n.Decode(&x); err == nil {
			switch x := x.(type) {
			case int:
				return int64(x)
			case int64, uint64:
				return x
			case float64:
				return x
			}
		}
	case "!!float":
		var f float64
		if err = n.Decode(&f); err == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				d.add(path, d.lineOf(path), "must be a finite number, got "+n.Value)
				return nil
			}
			return f
		}
	default:
		return n.Value
	}
	d.add(path, d.lineOf(path), fmt.Sprintf("%q is not a valid %s", n.Value, n.ShortTag()))
	return nil
}

// typeError reports that n is not of the kind t needs and returns false.
func (d *decoder) typeError(path string, n *yaml.Node, t reflect.Type) bool {
	var want string
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		want = "a mapping"
		if t == reflect.TypeFor[Hours]() {
			want = "a mapping with start and end, or null (closed)"
		}
	case reflect.Slice:
		want = "a list"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int:
		want = "an integer"
	default:
		want = "a number"
	}
	got := "a string"
	switch {
	case n.Kind == yaml.MappingNode:
		got = "a mapping"
	case n.Kind == yaml.SequenceNode:
		got = "a list"
	case n.ShortTag() == "!!null":
		got = "null"
	case n.ShortTag() == "!!bool":
		got = "a boolean"
	case n.ShortTag() == "!!int":
		got = "an integer"
	case n.ShortTag() == "!!float":
		got = "a number"
	}
	d.add(path, d.lineOf(path), fmt.Sprintf("must be %s, got %s", want, got))
	return false
}
