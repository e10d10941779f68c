package store

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// TestUUIDsTakeTheBinaryPath: a uuid.UUID is encoded and scanned as pgtype's own UUID, not
// through driver.Valuer and the text form (TestUUIDsReadBackAsWritten checks the values).
func TestUUIDsTakeTheBinaryPath(t *testing.T) {
	t.Parallel()
	m := pgtype.NewMap()
	useGoogleUUID(m)
	require.IsType(t, &uuidEncodePlan{}, m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, uuid.UUID{}))
	var target uuid.UUID
	require.IsType(t, uuidScanPlan{}, m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, &target))
}
