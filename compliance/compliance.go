// Package compliance holds the outbound compliance acknowledgment: a versioned text kept in
// this repository (outbound-<version>.md, embedded in the binary) that an owner or admin of a
// workspace accepts on the dashboard's Settings page before the workspace may message people
// first. No API or tool performs the acceptance; this package only records and answers.
//
// The current version is COMPLIANCE_VERSION (default DefaultVersion). A new version needs a
// new acceptance: an acceptance is of one version, and Accepted asks about the current one.
package compliance

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/google/uuid"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/store"
)

//go:embed outbound-*.md
var texts embed.FS

// DefaultVersion is the version of the newest text in the repository.
const DefaultVersion = "v1"

// Versions lists the versions whose text is in the binary.
func Versions() []string {
	names, _ := fs.Glob(texts, "outbound-*.md")
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(n, "outbound-"), ".md"))
	}
	sort.Strings(out)
	return out
}

// Text is the text of version; an error when the repository has no such version.
func Text(version string) (string, error) {
	b, err := texts.ReadFile("outbound-" + version + ".md")
	if err != nil {
		return "", fmt.Errorf("COMPLIANCE_VERSION %q: no text compliance/outbound-%s.md (known: %s)", version, version, strings.Join(Versions(), ", "))
	}
	return string(b), nil
}

// Service answers and records acceptances of the current version.
type Service struct {
	store   *store.Store
	version string
	text    string
}

// New is the service of the given version (DefaultVersion when empty); an error when its text
// is not in the binary.
func New(st *store.Store, version string) (*Service, error) {
	if version == "" {
		version = DefaultVersion
	}
	text, err := Text(version)
	if err != nil {
		return nil, err
	}
	return &Service{store: st, version: version, text: text}, nil
}

// Version is the current version; Text its text (markdown).
func (s *Service) Version() string { return s.version }

// Text is the current version's text (markdown).
func (s *Service) Text() string { return s.text }

// Acceptance is the workspace's acceptance of the current version, and whether there is one.
func (s *Service) Acceptance(ctx context.Context, workspaceID uuid.UUID) (store.ComplianceAcceptance, bool, error) {
	a, err := s.store.ComplianceAcceptance(ctx, workspaceID, s.version)
	if errors.Is(err, store.ErrNotFound) {
		return a, false, nil
	}
	return a, err == nil, err
}

// Accepted reports whether the workspace has accepted the current version: the gate that
// outbound messaging (campaigns) asks before contacting anyone.
func (s *Service) Accepted(ctx context.Context, workspaceID uuid.UUID) (bool, error) {
	_, ok, err := s.Acceptance(ctx, workspaceID)
	return ok, err
}

// Accept records that the signed-in user p accepts the current version for p's workspace.
// Only a person (a dashboard session, never a key) who is an owner or admin may; accepting
// again keeps the first record.
func (s *Service) Accept(ctx context.Context, p store.Principal) (store.ComplianceAcceptance, error) {
	if p.UserID == uuid.Nil {
		return store.ComplianceAcceptance{}, &apierr.Error{Kind: apierr.KindPermission, Code: "session_required",
			Message: "Only a person signed in to the dashboard accepts the compliance acknowledgment."}
	}
	if err := access.Check(p.Access(), access.Settings, "Accepting the compliance acknowledgment"); err != nil {
		return store.ComplianceAcceptance{}, err
	}
	var a store.ComplianceAcceptance
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if a, err = tx.AcceptCompliance(ctx, p.WorkspaceID, s.version, p.UserID, p.UserEmail, p.Role); err != nil {
			return err
		}
		return audit.Record(ctx, tx, p.WorkspaceID, audit.ComplianceAccepted, "compliance", s.version, map[string]any{"version": s.version})
	})
	return a, err
}
