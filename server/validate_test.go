package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"
	"github.com/stretchr/testify/require"

	"switchboard/gen/v1api"
)

// thingsSpec is a document of two operations with a path parameter, a query parameter and a
// body to validate. Its server is another host: a router that matched the request again by
// the document (gorillamux checks the host) would find no operation.
const thingsSpec = `openapi: 3.0.3
info: {title: things, version: "1"}
servers: [{url: "https://elsewhere.example"}]
paths:
  /things:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [name], properties: {name: {type: string, minLength: 1}}}
      responses: {"200": {description: ok}}
  /things/{id}:
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: string, pattern: "^t_[a-z]+$"}}
        - {name: limit, in: query, schema: {type: integer, maximum: 10}}
      responses: {"200": {description: ok}}
`

// TestRequestValidatorValidatesTheRouteEchoMatched: requests are validated against the
// operation echo routed them to (path parameter, query, body), without matching the document
// again; a path of no operation still gets the validator's 404.
func TestRequestValidatorValidatesTheRouteEchoMatched(t *testing.T) {
	spec, err := openapi3.NewLoader().LoadFromData([]byte(thingsSpec))
	require.NoError(t, err)
	require.NoError(t, spec.Validate(context.Background()))
	validator, err := requestValidator(spec, &echomw.Options{
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error { return c.String(he.Code, "refused") },
		Options:      openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	require.NoError(t, err)
	e := echo.New()
	g := e.Group("", validator)
	ok := func(c echo.Context) error { return c.String(http.StatusOK, "served "+c.Param("id")) }
	g.POST("/things", ok)
	g.GET("/things/:id", ok)
	g.GET("/other", ok) // routed by echo, not in the document

	for _, tc := range []struct {
		method, target, body string
		want                 int
	}{
		{http.MethodPost, "/things", `{"name":"a"}`, http.StatusOK},
		{http.MethodPost, "/things", `{"name":""}`, http.StatusBadRequest},
		{http.MethodGet, "/things/t_abc?limit=3", "", http.StatusOK},
		{http.MethodGet, "/things/t_ab%63", "", http.StatusOK}, // unescaped before validation
		{http.MethodGet, "/things/T-1", "", http.StatusBadRequest},
		{http.MethodGet, "/things/t_abc?limit=11", "", http.StatusBadRequest},
		{http.MethodGet, "/other", "", http.StatusNotFound},
	} {
		req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		require.Equal(t, tc.want, rec.Code, "%s %s: %s", tc.method, tc.target, rec.Body)
	}
}

// BenchmarkRequestValidator times validating POST /v1/chat/completions with the /v1
// document: by the route echo matched (requestValidator) and, beside it, by matching the
// document again (the generated middleware, gorillamux).
func BenchmarkRequestValidator(b *testing.B) {
	spec, err := v1api.GetSwagger()
	require.NoError(b, err)
	spec.Servers = nil
	opts := &echomw.Options{ErrorHandler: validationError, SilenceServersWarning: true,
		Options: openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	routedValidator, err := requestValidator(spec, opts)
	require.NoError(b, err)
	body := `{"model":"beta-5.4","messages":[{"role":"user","content":"Say hello."}]}`
	for name, validator := range map[string]echo.MiddlewareFunc{
		"echo-route": routedValidator, "gorillamux": echomw.OapiRequestValidatorWithOptions(spec, opts),
	} {
		b.Run(name, func(b *testing.B) {
			e := echo.New()
			e.POST(chatCompletionsPath, func(c echo.Context) error { return c.NoContent(http.StatusOK) }, validator)
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, chatCompletionsPath, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
