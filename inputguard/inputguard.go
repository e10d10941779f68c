// Package inputguard bounds what a request may carry before any layer works on it: how deep
// its JSON (or YAML) nests, and NUL characters, which PostgreSQL refuses in text and jsonb.
// The HTTP middleware, the MCP tools and the blueprint decoder all use it, so every surface
// refuses the same input with the same error.
package inputguard

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchboard/apierr"
)

// MaxDepth bounds the nesting of objects and arrays (mappings and lists in YAML). No
// operation needs more than a handful of levels; validators and decoders spend time and
// memory per level, so a small body nested thousands of levels deep is a denial of service.
const MaxDepth = 64

// TooDeep is the 400 of input nested deeper than MaxDepth; param names the input, or is
// empty for a whole request body.
func TooDeep(param string) *apierr.Error {
	return apierr.Invalid(param, "nesting_too_deep", "The input nests objects and arrays more than %d levels deep, the limit.", MaxDepth)
}

// HasNUL reports whether s holds a NUL character (U+0000).
func HasNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// CheckText refuses a string PostgreSQL would refuse as text: one holding a NUL character
// or bytes that are not UTF-8 (decoded JSON never has those; a path or a query may). param
// names the value.
func CheckText(param, s string) error {
	switch {
	case HasNUL(s):
		return NUL(param)
	case !utf8.ValidString(s):
		return apierr.Invalid(param, "invalid_utf8", "`%s` is not valid UTF-8.", param)
	}
	return nil
}

// NUL is the 400 of a value holding a NUL character; param is the value's path.
func NUL(param string) *apierr.Error {
	what := "The body"
	if param != "" {
		what = "`" + param + "`"
	}
	return apierr.Invalid(param, "nul_character", "%s contains a NUL character (\\u0000), which is not accepted in text.", what)
}

// JSONTooDeep reports whether raw nests objects and arrays deeper than MaxDepth. It scans
// bytes, tracking strings, so it costs one pass and no allocation; whether raw is valid JSON
// is left to the decoder that runs next.
func JSONTooDeep(raw []byte) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

// CheckJSON refuses a JSON document nested deeper than MaxDepth, or holding a NUL character
// in any string (value or property name); the error names the path of the first such string
// (`input[0].content`), as validation errors do. Invalid JSON passes: the validator reports it.
func CheckJSON(raw []byte) error {
	if JSONTooDeep(raw) {
		return TooDeep("")
	}
	if path, ok := JSONNUL(raw); ok {
		return NUL(path)
	}
	return nil
}

// nulEscape is how JSON writes U+0000 (a raw NUL byte is not valid JSON).
var nulEscape = []byte(`\u0000`)

// JSONNUL finds the first string of raw, in document order, that holds a NUL character. A
// property name holding one is reported at the path of its object.
func JSONNUL(raw []byte) (path string, found bool) {
	if !bytes.Contains(raw, nulEscape) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // the end, or not JSON: invalid JSON is the validator's to report
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				advance(stack)
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
				if HasNUL(v) {
					return render(stack[:n-1]), true
				}
				stack[n-1].key, stack[n-1].wantKey = v, false
				continue
			}
			if HasNUL(v) {
				return render(stack), true
			}
			advance(stack)
		default:
			advance(stack)
		}
	}
}

// frame is one open object or array of JSONNUL's walk.
type frame struct {
	object  bool
	wantKey bool   // objects: the next string is a property name
	key     string // objects: the property being read
	index   int    // arrays: the item being read
}

// advance moves the innermost container past the value just read.
func advance(stack []frame) {
	if len(stack) == 0 {
		return
	}
	top := &stack[len(stack)-1]
	if top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}

// render writes the path the frames are at: `messages[0].content`.
func render(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		if !f.object {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}

// Scrub replaces NUL characters with U+FFFD, for text the server did not receive from a
// client but must store all the same (a model's reply).
func Scrub(s string) string {
	if !HasNUL(s) {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// ScrubJSON is Scrub for a JSON document, where U+0000 is written as an escape (PostgreSQL
// refuses it in jsonb too). The result is as valid JSON as raw was.
func ScrubJSON(raw []byte) []byte {
	if !bytes.Contains(raw, nulEscape) && bytes.IndexByte(raw, 0) < 0 {
		return raw
	}
	out := bytes.ReplaceAll(raw, nulEscape, []byte(`\ufffd`))
	return bytes.ReplaceAll(out, []byte{0}, []byte("\uFFFD"))
}
