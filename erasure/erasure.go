// Package erasure deletes personal data: on request (a contact's erasure, POST
// /api/contacts/{id}/erase) and by age (the workspace's and agents' retention periods,
// enforced by a daily job, Sweeper). Both keep what the books and the event feeds need:
// metering rows stay with their personal fields blanked, and an erased event keeps its id
// and cursor, its data replaced by {"erased":true} (a tombstone), so a feed has no gap.
package erasure

import (
	"context"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/audit"
	"switchboard/store"
)

// Report is what an erasure removed, by table and row count.
type Report struct {
	Object    string       `json:"object"`
	ContactID string       `json:"contact_id"`
	Tables    []TableCount `json:"tables"`
	TotalRows int          `json:"total_rows"`
}

// TableCount is the rows of one table an erasure removed, blanked or tombstoned.
type TableCount struct {
	Table string `json:"table"`
	Rows  int    `json:"rows"`
}

// Retention is a workspace's retention setting.
type Retention struct {
	Object string `json:"object"`
	// Days is how long conversations are kept; nil keeps them.
	Days *int `json:"retention_days"`
}

// MaxRetentionDays bounds a retention period (100 years), as the database does.
const MaxRetentionDays = 36500

// eraseAttempts bounds the runs of one erasure (or retention batch) that PostgreSQL aborts to
// break a deadlock.
const eraseAttempts = 3

// againIfDeadlocked runs the transaction run, and again while PostgreSQL aborts it to break a
// deadlock, eraseAttempts times at most.
func againIfDeadlocked(run func() error) error { return store.AgainIfDeadlocked(eraseAttempts, run) }

// Service erases contacts and keeps the retention settings.
type Service struct {
	store *store.Store
}

// New returns the service over st.
func New(st *store.Store) *Service { return &Service{store: st} }

// EraseContact erases the personal data of contact id of ws, in one transaction with its
// audit entry, and reports what it erased. Erasing again finds nothing left and reports
// zero rows (and is audited again: someone asked).
//
// The erasure locks the contact, then its conversations, then the workspace's row (to leave
// no event unseen, store.EraseContact): a writer taking two of them the other way round can
// deadlock with it, and PostgreSQL then aborts one of the two. If that is the erasure, it
// runs again, up to eraseAttempts times in all.
func (s *Service) EraseContact(ctx context.Context, ws, id uuid.UUID) (Report, error) {
	var erased store.ErasedContact
	err := againIfDeadlocked(func() error {
		return s.store.InTx(ctx, func(tx *store.Tx) error {
			var err error
			if erased, err = tx.EraseContact(ctx, ws, id); err != nil {
				return err
			}
			return audit.Record(ctx, tx, ws, audit.ContactErased, "contact", id.String(), map[string]any{"rows": rowsByTable(erased.Rows), "already_erased": erased.AlreadyErased})
		})
	})
	if err != nil {
		return Report{}, apierr.WithParam(err, "id")
	}
	r := Report{Object: "contact_erasure", ContactID: id.String(), Tables: make([]TableCount, 0, len(erased.Rows))}
	for _, t := range erased.Rows {
		r.Tables = append(r.Tables, TableCount{Table: t.Table, Rows: t.Rows})
		r.TotalRows += t.Rows
	}
	return r, nil
}

func rowsByTable(rows []store.ErasedRows) map[string]int {
	m := make(map[string]int, len(rows))
	for _, r := range rows {
		m[r.Table] = r.Rows
	}
	return m
}

// Retention is ws's retention setting.
func (s *Service) Retention(ctx context.Context, ws uuid.UUID) (Retention, error) {
	days, err := s.store.WorkspaceRetention(ctx, ws)
	return Retention{Object: "retention", Days: days}, err
}

// SetRetention sets ws's retention period: 1 to MaxRetentionDays days, or nil to keep
// everything. Audited.
func (s *Service) SetRetention(ctx context.Context, ws uuid.UUID, days *int) (Retention, error) {
	if days != nil && (*days < 1 || *days > MaxRetentionDays) {
		return Retention{}, apierr.Invalid("retention_days", "invalid_value", "retention_days must be from 1 to %d days, or null to keep everything.", MaxRetentionDays)
	}
	var out *int
	err := s.store.InTx(ctx, func(tx *store.Tx) error {
		before, err := tx.WorkspaceRetention(ctx, ws)
		if err != nil {
			return err
		}
		if out, err = tx.SetWorkspaceRetention(ctx, ws, days); err != nil {
			return err
		}
		return audit.Record(ctx, tx, ws, audit.RetentionChanged, "workspace", ws.String(), map[string]any{"from": before, "to": out})
	})
	return Retention{Object: "retention", Days: out}, err
}
