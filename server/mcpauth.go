package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
)

// bearerChallenge adds `WWW-Authenticate: Bearer` to the 401s of /mcp (RFC 6750 and the MCP
// authorization spec): MCP clients such as the MCP Inspector read a 401 without it as an
// OAuth flow they cannot start, and report a confusing error instead of a bad key. Once
// OAuth exists, the challenge gains its resource_metadata parameter here.
func bearerChallenge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if e := apierr.As(err); e != nil && e.Status() == http.StatusUnauthorized {
			challenge := `Bearer realm="switchboard"`
			if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
				challenge += `, error="invalid_token", error_description="` + quoteSafe.Replace(e.Message) + `"`
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, challenge)
		}
		return err
	}
}

// quoteSafe keeps a message inside a quoted-string of the header.
var quoteSafe = strings.NewReplacer(`"`, "'", `\`, "")
