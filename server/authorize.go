package server

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"switchboard/access"
)

// permissionExtension names, on each operation of the OpenAPI documents, the permission
// (access.Permission) a key's role must hold to call it. The contract publishes it, and the
// server reads it from there, so the document and the check cannot disagree.
const permissionExtension = "x-permission"

// routePermissions maps "METHOD /echo/path/:param" to the permission of its operation. An
// operation without a known x-permission is an error: a route nobody decided on is refused
// at start, never served to every role.
func routePermissions(spec *openapi3.T) (map[string]access.Permission, error) {
	out := map[string]access.Permission{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			p, ok := op.Extensions[permissionExtension].(string)
			if !ok || !access.Known(access.Permission(p)) {
				return nil, fmt.Errorf("%s %s: %s is missing or not a permission of the access table", method, path, permissionExtension)
			}
			out[method+" "+echoPath(path)] = access.Permission(p)
		}
	}
	return out, nil
}

// spendsExtension marks, on each operation of the OpenAPI documents, whether it spends the
// workspace's money (it runs turns): `x-spends: true`. A workspace at its monthly spend cap
// is refused these, and only these (quota.Check). Absent is false.
const spendsExtension = "x-spends"

// routeSpends lists, by "METHOD /echo/path/:param", the operations of spec marked x-spends.
// A value that is not a boolean is an error at start, as is an unknown x-permission.
func routeSpends(spec *openapi3.T) (map[string]bool, error) {
	out := map[string]bool{}
	for path, item := range spec.Paths.Map() {
		for method, op := range item.Operations() {
			v, present := op.Extensions[spendsExtension]
			if !present {
				continue
			}
			spends, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%s %s: %s must be true or false, not %v", method, path, spendsExtension, v)
			}
			if spends {
				out[method+" "+echoPath(path)] = true
			}
		}
	}
	return out, nil
}

// learnSpends adds the spending operations of spec to those mayWork holds at the cap. It
// runs while the routes are built, before any request.
func (s *Server) learnSpends(spec *openapi3.T) error {
	spends, err := routeSpends(spec)
	if err != nil {
		return err
	}
	if s.spends == nil {
		s.spends = map[string]bool{}
	}
	maps.Copy(s.spends, spends)
	return nil
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// echoPath writes an OpenAPI path the way echo (and the generated routes) name it.
func echoPath(p string) string { return pathParam.ReplaceAllString(p, ":$1") }

// authorize refuses, with 403 role_not_allowed, a call whose key's role lacks the permission
// of its operation. It runs after authentication and before the request validator, so a
// role that may not call an operation learns nothing about what its body should be.
func authorize(perms map[string]access.Permission) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			perm, ok := perms[c.Request().Method+" "+c.Path()]
			if !ok {
				return next(c) // no such operation: the router answers 404 or 405
			}
			p, _ := principalFrom(c.Request().Context())
			what := strings.TrimSpace(c.Request().Method + " " + c.Path())
			if err := access.Check(p.Access(), perm, what); err != nil {
				return err
			}
			return next(c)
		}
	}
}
