package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// framesExtension lists, on a text/event-stream media type, the frames the stream may carry:
// each entry's `event` is the frame's `event:` line (absent: the frame has none) and its
// `data` either `#/components/schemas/NAME`, the schema that the JSON of the frame's `data:`
// line follows, or the literal text of that line (such as `[DONE]`). OpenAPI 3.0 cannot type
// the frames of a stream; the document explains the extension in its description.
const framesExtension = "x-sse-frames"

const schemaPrefix = "#/components/schemas/"

// listedFrame is one entry of an x-sse-frames list.
type listedFrame struct {
	Event string `json:"event"`
	Data  string `json:"data"`
}

// frame is one event of a stream as a client sees it: its event name ("" without an
// `event:` line) and its data lines joined by newlines.
type frame struct {
	event, data string
}

// CheckFrame validates the JSON of one stream frame's data against the component schema
// `schema` of the document, and fails t on any violation.
func CheckFrame(t testing.TB, doc []byte, schema string, data []byte) {
	t.Helper()
	if err := Load(t, doc).CheckFrame(schema, data); err != nil {
		t.Errorf("contract violation: frame %s: %v: %s", schema, err, data)
	}
}

// CheckFrame validates the JSON data of one stream frame against a component schema.
func (v *Validator) CheckFrame(schema string, data []byte) error {
	ref := v.spec.Components.Schemas[schema]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("the document has no schema %q", schema)
	}
	var value any
	if err := json.Unmarshal(data, &value); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return ref.Value.VisitJSON(value, openapi3.MultiErrors())
}

// frameList is the x-sse-frames list of the operation and status a response answers, or nil
// when the response is no event stream or its stream is not described frame by frame.
func (v *Validator) frameList(req *http.Request, resp *http.Response) []listedFrame {
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mediaType != "text/event-stream" {
		return nil
	}
	route, _, err := v.router.FindRoute(req)
	if err != nil {
		return nil
	}
	out := route.Operation.Responses.Status(resp.StatusCode)
	if out == nil || out.Value == nil {
		return nil
	}
	media := out.Value.Content.Get(mediaType)
	if media == nil {
		return nil
	}
	list, _ := listedFrames(media) // checked by Load
	return list
}

// checkListed accepts a frame that one entry of the list with its event name describes.
func (v *Validator) checkListed(list []listedFrame, f frame) error {
	var errs []error
	for _, l := range list {
		switch {
		case l.Event != f.event:
		case !strings.HasPrefix(l.Data, schemaPrefix):
			if l.Data == f.data {
				return nil
			}
			errs = append(errs, fmt.Errorf("not %q", l.Data))
		default:
			name := strings.TrimPrefix(l.Data, schemaPrefix)
			err := v.CheckFrame(name, []byte(f.data))
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("not a %s: %w", name, err))
		}
	}
	if len(errs) == 0 {
		return fmt.Errorf("%s lists no frame with this event name: %s", framesExtension, f.data)
	}
	return fmt.Errorf("%w: %s", errors.Join(errs...), f.data)
}

// listedFrames decodes a media type's x-sse-frames list (nil when it has none).
func listedFrames(media *openapi3.MediaType) ([]listedFrame, error) {
	ext, ok := media.Extensions[framesExtension]
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(ext)
	if err != nil {
		return nil, err
	}
	var list []listedFrame
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("%s: %w", framesExtension, err)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("%s: an empty list", framesExtension)
	}
	return list, nil
}

// checkFrameLists makes sure every x-sse-frames list of the document is well formed and
// names schemas the document has.
func checkFrameLists(spec *openapi3.T) error {
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			for status, out := range op.Responses.Map() {
				if out.Value == nil {
					continue
				}
				for mediaType, media := range out.Value.Content {
					list, err := listedFrames(media)
					if err != nil {
						return fmt.Errorf("%s %s %s %s: %w", method, path, status, mediaType, err)
					}
					for _, l := range list {
						name, isSchema := strings.CutPrefix(l.Data, schemaPrefix)
						if isSchema && spec.Components.Schemas[name] == nil {
							return fmt.Errorf("%s %s %s %s: %s names the unknown schema %q", method, path, status, mediaType, framesExtension, name)
						}
					}
				}
			}
		}
	}
	return nil
}

// frameChecker is an event-stream body that hands each complete frame to check as the
// client reads it, so that long streams are checked as they go and a client that stops
// early is not made to wait.
type frameChecker struct {
	body    io.ReadCloser
	check   func(n int, f frame)
	pending []byte // the start of a line not yet complete
	current frame
	hasData bool
	count   int
}

func (c *frameChecker) Read(p []byte) (int, error) {
	n, err := c.body.Read(p)
	c.feed(p[:n])
	if err == io.EOF {
		c.flush()
	}
	return n, err
}

func (c *frameChecker) Close() error { return c.body.Close() }

func (c *frameChecker) feed(b []byte) {
	c.pending = append(c.pending, b...)
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 {
			return
		}
		c.line(strings.TrimSuffix(string(c.pending[:i]), "\r"))
		c.pending = c.pending[i+1:]
	}
}

// line applies one line of the stream, as the SSE specification reads it.
func (c *frameChecker) line(line string) {
	if line == "" {
		c.dispatch()
		return
	}
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "event":
		c.current.event = value
	case "data":
		if c.hasData {
			c.current.data += "\n"
		}
		c.current.data += value
		c.hasData = true
	}
}

// dispatch checks the frame ended by a blank line; a frame without data is no event.
func (c *frameChecker) dispatch() {
	if c.hasData {
		c.check(c.count, c.current)
		c.count++
	}
	c.current, c.hasData = frame{}, false
}

// flush treats the end of the body as the end of its last frame.
func (c *frameChecker) flush() {
	if len(c.pending) > 0 {
		c.line(string(c.pending))
		c.pending = nil
	}
	c.dispatch()
}
