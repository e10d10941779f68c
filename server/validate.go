package server

import (
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"
)

// requestValidator is echo-middleware's OapiRequestValidatorWithOptions, validating against
// the operation echo routed the request to. The generated middleware finds the operation a
// second time with kin-openapi's gorillamux router, which tries a regular expression per
// path in turn and copies the route it finds: 1.3% of the server's CPU in an ephemeral chat
// completion (perf, issue 17). Echo has already matched the route, and its path names the
// operation (echoPath). A request echo matched to no operation of the document (its 404s
// and 405s) goes through gorillamux as before, so it is answered as before.
func requestValidator(spec *openapi3.T, opts *echomw.Options) (echo.MiddlewareFunc, error) {
	mux, err := gorillamux.NewRouter(spec)
	if err != nil {
		return nil, err
	}
	fallback := routers.Router(mux)
	routes := map[string]*routers.Route{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			routes[method+" "+echoPath(path)] = &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: withoutSecurity(op)}
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			router := fallback
			if r, ok := routes[c.Request().Method+" "+c.Path()]; ok {
				router = routed{route: r, names: c.ParamNames(), values: c.ParamValues()}
			}
			if err := echomw.ValidateRequestFromContext(c, router, opts); err != nil {
				return opts.ErrorHandler(c, err)
			}
			return next(c)
		}
	}, nil
}

// withoutSecurity is op with no security requirement, for validating requests only. The
// authenticate middleware has already decided who the caller is (the validator's
// AuthenticationFunc is a no-op), yet kin-openapi's security step still reads the whole body
// into memory and puts a copy back for each scheme of each requirement: 1.1% of the
// server's CPU in an ephemeral chat completion (PPROF_ADDR profile, issue 17) for no
// decision. The published document keeps its requirements; op itself is not changed.
func withoutSecurity(op *openapi3.Operation) *openapi3.Operation {
	o := *op
	o.Security = &openapi3.SecurityRequirements{}
	return &o
}

// routed is the route echo matched, as a kin-openapi router answers it: the operation and
// its path parameters by name (escaped as echo holds them; the middleware unescapes them,
// as it does gorillamux's).
type routed struct {
	route         *routers.Route
	names, values []string
}

func (r routed) FindRoute(*http.Request) (*routers.Route, map[string]string, error) {
	var params map[string]string
	if len(r.names) > 0 {
		params = make(map[string]string, len(r.names))
		for i, name := range r.names {
			if i < len(r.values) {
				params[name] = r.values[i]
			}
		}
	}
	return r.route, params, nil
}
