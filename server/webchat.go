package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"

	"switchboard/openapi"
	"switchboard/webchat"
)

// The public webchat routes serve the embeddable widget of one webchat deployment. They take
// no API key: the deployment id in the path names the agent, the deployment's
// config.allowed_origins names the pages that may use it (empty: any), and a visitor token
// issued by the server ties a visitor to their own conversation (webchat.Service decides
// all of it). Their contract is openapi/embed.yaml (served at /openapi/embed.yaml), not
// openapi/api.yaml: that document is the keyed management surface, and these routes sit
// outside /api, beside the widget's script, with their own CORS and budgets (README,
// Webchat). The JSON routes are generated (routeEmbed); these are registered by hand, and
// gen/embedapi/oapi-codegen.yaml leaves them out: the widget's files are fixed bytes for any
// page, and the visitor's stream is a long-lived SSE answer that resumes with Last-Event-ID,
// which the strict server's one response per call does not express. The loader
// (/embed/{deploymentId}.js, embedScript) is registered by routePublic: echo cannot route a
// parameter followed by a suffix.
func (s *Server) routeWebchat(e *echo.Echo) {
	e.GET("/openapi/embed.yaml", staticBlob("application/yaml", openapi.EmbedYAML))
	e.GET("/embed/static/widget.js", staticAsset("text/javascript; charset=utf-8", webchat.Widget))
	e.GET("/embed/static/widget.css", staticAsset("text/css; charset=utf-8", webchat.WidgetCSS))
	e.GET("/embed/:deploymentId/stream", s.webchatStream, s.embedDeployment)
	s.routeEmbed(e)
}

// publicPermission is the x-permission of every operation of openapi/embed.yaml: no key, no
// role. It is no permission of the access table, so routePermissions refuses it on /v1 and
// /api, and checkEmbedContract refuses anything else on the embed routes: a keyless route is
// always a decision written in the contract.
const publicPermission = "public"

var embedText sync.Once

// checkEmbedContract refuses to start when an operation of openapi/embed.yaml is not marked
// public (x-permission: public, security: []).
func checkEmbedContract() error {
	// The loader and the widget's files are text: kin-openapi (the contract checks) reads them
	// as such.
	embedText.Do(func() {
		openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
	})
	spec, err := openapi3.NewLoader().LoadFromData(openapi.EmbedYAML)
	if err != nil {
		return fmt.Errorf("openapi/embed.yaml: %w", err)
	}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			if p, _ := op.Extensions[permissionExtension].(string); p != publicPermission || op.Security == nil || len(*op.Security) != 0 {
				return fmt.Errorf("openapi/embed.yaml: %s %s: every embed route must be %s: %s and security: []", method, path, permissionExtension, publicPermission)
			}
		}
	}
	return nil
}

// staticAsset serves a widget file to any page (CORS: the loader adds it from the host page).
func staticAsset(contentType string, body []byte) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderAccessControlAllowOrigin, "*")
		h.Set(echo.HeaderCacheControl, "public, max-age=3600")
		return c.Blob(http.StatusOK, contentType, body)
	}
}
