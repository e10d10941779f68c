package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"

	"switchboard/apierr"
	"switchboard/gen/apiapi"
	"switchboard/gen/v1api"
	"switchboard/manage"
)

// apiHandlers implements the generated strict /api interface over the same operations as
// the MCP tools. Each handler answers with a generated response object; the contract names
// the manage result types as the bodies (x-go-type), so an operation's result is the body
// as it is, with no copy that could drift from what the MCP tools return.
type apiHandlers struct {
	s *Server
}

var _ apiapi.StrictServerInterface = (*apiHandlers)(nil)

var yamlAsText sync.Once

// apiSpec and v1Spec are the generated packages' documents, decoded once per process and
// only read after that (routers, validators, permission tables): each server.New decoded
// them anew, 10% of the server tests' CPU under -race, which start a server per test.
var (
	apiSpec = sync.OnceValues(func() (*openapi3.T, error) { return specForRouting(apiapi.GetSwagger()) })
	v1Spec  = sync.OnceValues(func() (*openapi3.T, error) { return specForRouting(v1api.GetSwagger()) })
)

// specForRouting drops a document's servers, so that its routes match any host: the
// published document names a local server.
func specForRouting(spec *openapi3.T, err error) (*openapi3.T, error) {
	if err != nil {
		return nil, err
	}
	spec.Servers = nil
	return spec, nil
}

func (s *Server) routeAPI(e *echo.Echo) error {
	// A blueprint is validated by the blueprint parser, which reports paths and lines; the
	// contract only says the body is YAML text, so kin-openapi must not parse it itself.
	yamlAsText.Do(func() { openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder) })
	spec, err := apiSpec()
	if err != nil {
		return err
	}
	validator, err := requestValidator(spec, &echomw.Options{
		ErrorHandler: validationError,
		Options:      openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if err != nil {
		return err
	}
	perms, err := routePermissions(spec)
	if err != nil {
		return err
	}
	if err := s.learnSpends(spec); err != nil {
		return err
	}
	e.Pre(campaignsSlash)
	g := e.Group("/api", s.sessionAuth, s.authenticator(true), authorize(perms), skipForUploads(s.bodyLimit()), skipForUploads(s.guardInput(spec)),
		skipForUploads(keepRawBody), s.outboundGate, importMultipart, recordingsMultipart, skipForUploads(validator))
	apiapi.RegisterHandlers(basePath{g: g, prefix: "/api"}, apiapi.NewStrictHandler(&apiHandlers{s: s}, apiStrictMiddlewares))
	return nil
}

type rawBodyKey struct{}

// keepRawBody keeps the request body for handlers that need more than the decoded struct
// (PATCH must tell a null from an absent field).
func keepRawBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Body == nil || req.Method == http.MethodGet {
			return next(c)
		}
		raw, err := readBody(req.Body)
		if err != nil {
			return err
		}
		req.Body = io.NopCloser(bytes.NewReader(raw))
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), rawBodyKey{}, raw)))
		return next(c)
	}
}

func workspaceOf(ctx context.Context) uuid.UUID {
	p, _ := principalFrom(ctx)
	return p.WorkspaceID
}

func (h *apiHandlers) ListAgents(ctx context.Context, req apiapi.ListAgentsRequestObject) (apiapi.ListAgentsResponseObject, error) {
	in := manage.ListAgentsInput{}
	if req.Params.Status != nil {
		in.Status = *req.Params.Status
	}
	out, err := h.s.ops.ListAgents(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return apiapi.ListAgents200JSONResponse(out), nil
}

func (h *apiHandlers) CreateAgent(ctx context.Context, req apiapi.CreateAgentRequestObject) (apiapi.CreateAgentResponseObject, error) {
	var in manage.CreateAgentInput
	switch {
	case req.JSONBody != nil:
		in.YAML = req.JSONBody.Yaml
	case req.Body != nil:
		raw, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		in.YAML = string(raw)
	}
	out, err := h.s.ops.CreateAgent(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateAgent201JSONResponse(out), nil
}

func (h *apiHandlers) GetAgent(ctx context.Context, req apiapi.GetAgentRequestObject) (apiapi.GetAgentResponseObject, error) {
	out, err := h.s.ops.GetAgent(ctx, workspaceOf(ctx), manage.GetAgentInput{AgentID: req.Id.String()})
	if err != nil {
		return nil, restParam(err)
	}
	return apiapi.GetAgent200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateAgent(ctx context.Context, req apiapi.UpdateAgentRequestObject) (apiapi.UpdateAgentResponseObject, error) {
	raw, _ := ctx.Value(rawBodyKey{}).([]byte)
	var updates map[string]json.RawMessage
	if err := json.Unmarshal(raw, &updates); err != nil {
		return nil, apierr.Invalid("", "invalid_json", "The request body must be a JSON object of fields to change.")
	}
	ws := workspaceOf(ctx)
	if _, err := h.s.ops.UpdateAgent(ctx, ws, manage.UpdateAgentInput{AgentID: req.Id.String(), Updates: updates}); err != nil {
		return nil, restParam(err)
	}
	out, err := h.s.ops.GetAgent(ctx, ws, manage.GetAgentInput{AgentID: req.Id.String()})
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateAgent200JSONResponse(out), nil
}

// restParam names the path parameter `id` where an operation names its tool argument.
func restParam(err error) error {
	if e := apierr.As(err); e != nil && e.Param == "agent_id" {
		copied := *e
		copied.Param = "id"
		return &copied
	}
	return err
}
