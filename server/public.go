package server

import (
	_ "embed"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"switchboard"
	"switchboard/blueprint"
	"switchboard/openapi"
	"switchboard/workflows"
)

//go:embed static/errors.md
var errorsDoc []byte

// routePublic registers the routes that need no key: health, the machine-readable
// description, the contracts, their changelog and the error documentation.
func (s *Server) routePublic(e *echo.Echo) error {
	llms, err := llmsTxt(s.ops)
	if err != nil {
		return err
	}
	e.GET("/health", s.health)
	e.GET("/ready", s.readyz)
	e.GET("/llms.txt", staticBlob("text/plain; charset=utf-8", llms))
	e.GET("/docs/errors", staticBlob("text/markdown; charset=utf-8", errorsDoc))
	e.GET("/changelog", staticBlob("text/markdown; charset=utf-8", switchboard.Changelog))
	e.GET("/openapi/v1.yaml", staticBlob("application/yaml", openapi.V1YAML))
	e.GET("/openapi/v1.json", s.v1JSON)
	e.GET("/openapi/api.yaml", staticBlob("application/yaml", openapi.APIYAML))
	e.GET("/schemas/blueprint.json", staticBlob("application/schema+json", blueprint.JSONSchema()))
	e.GET("/schemas/workflow.json", staticBlob("application/schema+json", workflows.JSONSchema()))
	e.GET("/agents/:id/test", s.testPage)
	e.GET("/embed/:id", s.embedScript)
	s.routeWebchat(e)
	return nil
}

func staticBlob(contentType string, body []byte) echo.HandlerFunc {
	return func(c echo.Context) error { return c.Blob(http.StatusOK, contentType, body) }
}

// v1JSON serves the published contract as JSON. It is read from openapi/v1.yaml, not from
// the generated package: the spec embedded there went through gen/v1api/overlay.yaml, which
// drops the rate-limit headers that every response still carries.
func (s *Server) v1JSON(c echo.Context) error {
	spec, err := openapi3.NewLoader().LoadFromData(openapi.V1YAML)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, spec)
}
