// Package manage holds the agent-management operations, each written once, with a typed
// input, its validation and its result, and offered on every surface that exposes it: the
// MCP tool server and the /api routes. Every operation is scoped to the caller's workspace.
package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/catalog"
	"switchboard/netguard"
	"switchboard/store"
)

// Service runs the operations.
type Service struct {
	store     *store.Store
	catalog   *catalog.Catalog
	guard     netguard.Guard
	jobs      *river.Client[pgx.Tx]
	publicURL string
	extra     []Operation // registered from outside the package (Register)
}

// New returns the service. publicURL is PUBLIC_BASE_URL without a trailing slash (the
// configuration trims it once), the base of the links it hands out.
func New(st *store.Store, cat *catalog.Catalog, guard netguard.Guard, jobs *river.Client[pgx.Tx], publicURL string) *Service {
	return &Service{store: st, catalog: cat, guard: guard, jobs: jobs, publicURL: publicURL}
}

// parseID reads an agent (or other) UUID parameter.
func parseID(param, value string) (uuid.UUID, error) {
	id, err := uuid.Parse(value)
	if err != nil {
		return id, apierr.Invalid(param, "invalid_id", "%s must be a UUID, not %q.", param, value)
	}
	return id, nil
}

// agent loads an agent of the workspace by its id parameter.
func (s *Service) agent(ctx context.Context, ws uuid.UUID, param, value string) (store.Agent, error) {
	id, err := parseID(param, value)
	if err != nil {
		return store.Agent{}, err
	}
	a, err := s.store.AgentByID(ctx, ws, id)
	return a, apierr.WithParam(err, param)
}

func decodeBlueprint(a store.Agent) (*blueprint.Blueprint, error) {
	var bp blueprint.Blueprint
	if err := json.Unmarshal(a.Blueprint, &bp); err != nil {
		return nil, fmt.Errorf("stored blueprint of agent %s: %w", a.ID, err)
	}
	return &bp, nil
}

// invalidBlueprint reports every blueprint error at once, each with its path and line.
func invalidBlueprint(param string, err error) error {
	var errs blueprint.Errors
	if !errors.As(err, &errs) {
		return apierr.Invalid(param, "invalid_blueprint", "%v", err)
	}
	return &apierr.Error{Kind: apierr.KindInvalid, Param: param, Code: "invalid_blueprint",
		Message: fmt.Sprintf("The blueprint has %d error(s):\n%s", len(errs), errs.Error()), Err: errs}
}

// testURL is the page where a person can try an agent; the server serves it.
func (s *Service) testURL(agentID uuid.UUID) string {
	return s.publicURL + "/agents/" + agentID.String() + "/test"
}

func (s *Service) embedURL(deploymentID uuid.UUID) string {
	return s.publicURL + "/embed/" + deploymentID.String() + ".js"
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }
