package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PoolConfig parses databaseURL into a pool configuration whose connections encode and scan
// github.com/google/uuid values directly (useGoogleUUID). Open uses it; so do tests that build
// pools of their own, so they run the codec the server runs. Its connections are named
// AppName in pg_stat_activity unless databaseURL names them (application_name).
func PoolConfig(databaseURL string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = AppName
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		useGoogleUUID(conn.TypeMap())
		return nil
	}
	return cfg, nil
}

// useGoogleUUID teaches a connection's type map that a uuid.UUID is a pgtype.UUID. pgx knows
// nothing of the type but its driver.Valuer and sql.Scanner, so without this every uuid
// parameter (each id of a batch's rows, each element of a uuid[] array, each COPY field) is
// encoded by way of String(), a failed binary encode of that string (an error built with
// fmt.Errorf), a text scan and only then the binary encode; and every uuid read into a
// uuid.UUID is formatted as text and parsed back. Measured: 1.9% of the server's CPU in
// scenario 7 (docs/benchmarks.md). A uuid scanned into `any` is still pgx's [16]byte.
func useGoogleUUID(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{wrapUUIDEncode}, m.TryWrapEncodePlanFuncs...)
	m.RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
}

// pgUUID is a uuid.UUID as pgtype sees one: a UUIDValuer and a UUIDScanner.
type pgUUID uuid.UUID

func (u pgUUID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

// ScanUUID reads NULL as the zero UUID (sqlc's targets are zero already; uuid.UUID's own Scan
// left the target as it was).
func (u *pgUUID) ScanUUID(v pgtype.UUID) error {
	*u = v.Bytes // zero when !v.Valid
	return nil
}

func wrapUUIDEncode(value any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if u, ok := value.(uuid.UUID); ok {
		return &uuidEncodePlan{}, pgUUID(u), true
	}
	return nil, nil, false
}

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p *uuidEncodePlan) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgUUID(value.(uuid.UUID)), buf)
}

// uuidCodec is pgtype's UUID codec that also scans into a *uuid.UUID as a UUIDScanner. It has
// to be the codec: pgx asks the codec first, then takes any sql.Scanner, before it would try
// a TryWrapScanPlanFunc.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		if next := c.UUIDCodec.PlanScan(m, oid, format, (*pgUUID)(nil)); next != nil {
			return uuidScanPlan{next}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p uuidScanPlan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgUUID)(dst.(*uuid.UUID)))
}
