package server

import (
	"fmt"
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
