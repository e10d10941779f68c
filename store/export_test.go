package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"switchboard/store/internal/dbsqlc"
)

// RoundTrips is how many batches a pipelined transaction has sent so far (Store.Pipelined).
func RoundTrips(t *Tx) int { return t.db.(*pipe).sent }

// SearchKnowledgeInDatabase is SearchKnowledgeWith by the statements only, never a copy in
// memory.
func (s *Store) SearchKnowledgeInDatabase(ctx context.Context, workspaceID uuid.UUID, plan SearchPlan, limit int) ([]Chunk, error) {
	q := s.queries
	q.indexes = nil
	return q.SearchKnowledgeWith(ctx, workspaceID, plan, limit)
}

// SearchKnowledgeInMemory is SearchKnowledgeWith by the copy in memory of plan's knowledge
// base at plan's generation, once it is loaded; false when it is not within 10 s.
func (s *Store) SearchKnowledgeInMemory(workspaceID uuid.UUID, plan SearchPlan, limit int) ([]Chunk, bool) {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ix := s.indexes.get(workspaceID, plan.Base, plan.Generation); ix != nil {
			return ix.search(plan, limit), true
		}
	}
	return nil, false
}

// PlanSearch is the plan of an agent's search for query (KnowledgeSearchPlan).
func (s *Store) PlanSearch(ctx context.Context, workspaceID, agentID uuid.UUID, query string) (SearchPlan, error) {
	p, err := s.sql.KnowledgeSearchPlan(ctx, s.db, dbsqlc.KnowledgeSearchPlanParams{WorkspaceID: workspaceID, AgentID: agentID, Query: query})
	return SearchPlan{Sources: p.Sources, Lexemes: p.Lexemes, Base: p.ID, Generation: p.Generation}, err
}

// QueryRowForTest scans the one row of sql into dest.
func (s *Store) QueryRowForTest(ctx context.Context, sql string, args []any, dest ...any) error {
	return s.db.QueryRow(ctx, sql, args...).Scan(dest...)
}

// DeleteSourceForTest deletes a source of a knowledge base (its chunks go with it).
func (s *Store) DeleteSourceForTest(ctx context.Context, workspaceID, id uuid.UUID) error {
	_, err := s.db.Exec(ctx, `DELETE FROM knowledge_sources WHERE workspace_id = $1 AND id = $2`, workspaceID, id)
	return err
}

// ReloadSearchAtOnce lets a copy of a knowledge base be loaded again as soon as it changed
// (searchIndexes.reloadGap), for the tests that change one.
func ReloadSearchAtOnce(s *Store) { s.indexes.reloadGap = 0 }

// MigrateTo applies the embedded migrations up to and including version, as a database
// migrated by an older build has them.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	provider, err := migrationProvider(db)
	if err != nil {
		return err
	}
	_, err = provider.UpTo(ctx, version)
	return err
}

// Tombstone is the tombstoning of ws's events that mention any of ids, in a transaction of
// its own.
func (s *Store) Tombstone(ctx context.Context, ws uuid.UUID, ids []string) (int64, error) {
	var n int64
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.tombstone(ctx, ws, ids)
		return err
	})
	return n, err
}

// TombstoneOn is the tombstoning on tx, which the caller may roll back (measurements).
func TombstoneOn(ctx context.Context, tx pgx.Tx, ws uuid.UUID, ids []string) (int64, error) {
	q := queries{db: tx, sql: dbsqlc.New()}
	return q.tombstone(ctx, ws, ids)
}
