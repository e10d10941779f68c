package apierr_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"switchboard/apierr"
)

// missing is an error of another layer with a public form, as the store's not-found is.
type missing struct{ what string }

func (m missing) Error() string { return m.what + " not found" }
func (m missing) Public() *apierr.Error {
	return apierr.NotFound("", m.what+"_not_found", "No %s with that id in this workspace.", m.what)
}

func TestAsMapsPublicErrorsThroughTheTable(t *testing.T) {
	wrapped := fmt.Errorf("loading: %w", missing{"agent"})
	e := apierr.As(wrapped)
	if e == nil {
		t.Fatal("a wrapped Public error has no public form")
	}
	if e.Status() != http.StatusNotFound || e.Code != "agent_not_found" || e.Type() != "not_found_error" {
		t.Fatalf("got %d %s %s", e.Status(), e.Code, e.Type())
	}
	if apierr.As(errors.New("plain")) != nil {
		t.Fatal("a plain error got a public form")
	}
}

func TestWithParam(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		param string // "" means the error passes unchanged
	}{
		{"nil stays nil", nil, ""},
		{"a plain error passes unchanged", errors.New("boom"), ""},
		{"a public error names the field", missing{"conversation"}, "conversation"},
		{"an *Error names the field", apierr.Invalid("", "bad", "bad"), "conversation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := apierr.WithParam(tc.err, "conversation")
			if tc.param == "" {
				if got != tc.err { //nolint:errorlint // identity is the point
					t.Fatalf("got %v, want the same error back", got)
				}
				return
			}
			if e := apierr.As(got); e == nil || e.Param != tc.param {
				t.Fatalf("got %#v, want param %q", got, tc.param)
			}
		})
	}
	original := apierr.Invalid("x", "bad", "bad")
	_ = apierr.WithParam(original, "y")
	if original.Param != "x" {
		t.Fatal("WithParam changed the error it was given")
	}
}
