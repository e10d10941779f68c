package contract

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
)

const streamDoc = `
openapi: 3.0.3
info: {title: frames, version: 1.0.0}
paths:
  /s:
    get:
      responses:
        '200':
          description: a stream
          content:
            text/event-stream:
              schema: {type: string}
              x-sse-frames:
                - event: tick
                  data: '#/components/schemas/Tick'
                - data: '#/components/schemas/Tock'
                - data: '[DONE]'
components:
  schemas:
    Tick:
      type: object
      required: [n]
      properties:
        n: {type: integer}
    Tock:
      type: object
      additionalProperties: false
      required: [tock]
      properties:
        tock: {type: boolean}
`

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// stream serves body as an event stream and reads it through the Transport, in small reads
// so that frames arrive cut at arbitrary places.
func stream(t *testing.T, body string) []string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	client := &http.Client{Transport: Load(t, []byte(streamDoc)).Transport(rec, nil)}
	resp, err := client.Get(srv.URL + "/s")
	require.NoError(t, err)
	defer resp.Body.Close()
	buf := make([]byte, 7)
	for {
		_, err := resp.Body.Read(buf)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	return rec.errs
}

func TestTransportChecksEachFrameOfAStream(t *testing.T) {
	t.Parallel()
	require.Empty(t, stream(t, "event: tick\ndata: {\"n\":1}\n\n:ping\n\ndata: {\"tock\":true}\r\n\r\ndata: [DONE]\n\n"))
	require.Empty(t, stream(t, "event: tick\ndata: {\"n\":\ndata: 2}\n\nevent: tick\ndata: {\"n\":3}"),
		"data lines join; the end of the body ends the last frame")

	for body, want := range map[string]string{
		"event: tick\ndata: {\"n\":\"one\"}\n\n":    `frame 0 (event "tick"): not a Tick`,
		"event: tick\ndata: {}\n\n":                 `property "n" is missing`,
		"data: [DONE]\n\nevent: tock\ndata: {}\n\n": `frame 1 (event "tock"): x-sse-frames lists no frame with this event name`,
		"data: {\"tick\":1}\n\n":                    `not a Tock`,
		"data: [done]\n\n":                          `not "[DONE]"`,
	} {
		errs := stream(t, body)
		require.Len(t, errs, 1, body)
		require.Contains(t, errs[0], want, body)
	}
}

func TestCheckFrame(t *testing.T) {
	t.Parallel()
	rec := &recorder{TB: t}
	CheckFrame(rec, []byte(streamDoc), "Tick", []byte(`{"n":1}`))
	require.Empty(t, rec.errs)
	CheckFrame(rec, []byte(streamDoc), "Tick", []byte(`{"n":1.5}`))
	CheckFrame(rec, []byte(streamDoc), "Tack", []byte(`{}`))
	CheckFrame(rec, []byte(streamDoc), "Tick", []byte(`{"n":`))
	require.Len(t, rec.errs, 3)
	require.Contains(t, rec.errs[1], `the document has no schema "Tack"`)
	require.Contains(t, rec.errs[2], "not JSON")
}

func TestLoadRefusesAFrameListNamingAnUnknownSchema(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		strings.Replace(streamDoc, "schemas/Tock'", "schemas/Tack'", 1):      `names the unknown schema "Tack"`,
		strings.Replace(streamDoc, "- data: '[DONE]'", "- dta: '[DONE]'", 1): `unknown field "dta"`,
	} {
		spec, err := openapi3.NewLoader().LoadFromData([]byte(doc))
		require.NoError(t, err)
		err = checkFrameLists(spec)
		require.Error(t, err)
		require.Contains(t, err.Error(), want)
	}
}
