package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/google/uuid"

	"switchboard/shortid"
	"switchboard/store/internal/dbsqlc"
)

// UploadPrefix starts the public id of an upload (upl_…).
const UploadPrefix = "upl_"

// Upload is a stored file's metadata; its bytes are read with UploadContent.
type Upload struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	ShortID     string // upl_…
	Filename    string
	ContentType string
	Bytes       int
	SHA256      string // hex
	CreatedAt   time.Time
}

// NewUpload is a file to store.
type NewUpload struct {
	Filename    string
	ContentType string
	Content     []byte
}

// CreateUpload stores a file with a new public id.
func (q *queries) CreateUpload(ctx context.Context, workspaceID uuid.UUID, u NewUpload) (Upload, error) {
	sum := sha256.Sum256(u.Content)
	row, err := q.sql.CreateUpload(ctx, q.db, dbsqlc.CreateUploadParams{WorkspaceID: workspaceID, ShortID: shortid.New(UploadPrefix),
		Filename: u.Filename, ContentType: u.ContentType, Bytes: len(u.Content), SHA256: hex.EncodeToString(sum[:]), Content: u.Content})
	return Upload(row), err
}

// UploadByShortID returns an upload of the workspace by its public id.
func (q *queries) UploadByShortID(ctx context.Context, workspaceID uuid.UUID, shortID string) (Upload, error) {
	row, err := q.sql.UploadByShortID(ctx, q.db, dbsqlc.UploadByShortIDParams{WorkspaceID: workspaceID, ShortID: shortID})
	return Upload(row), notFound("upload", err)
}

// UploadByID returns an upload of the workspace.
func (q *queries) UploadByID(ctx context.Context, workspaceID, id uuid.UUID) (Upload, error) {
	row, err := q.sql.UploadByID(ctx, q.db, dbsqlc.UploadByIDParams{WorkspaceID: workspaceID, ID: id})
	return Upload(row), notFound("upload", err)
}

// UploadNamed returns the workspace's newest upload with that filename.
func (q *queries) UploadNamed(ctx context.Context, workspaceID uuid.UUID, filename string) (Upload, error) {
	row, err := q.sql.UploadNamed(ctx, q.db, dbsqlc.UploadNamedParams{WorkspaceID: workspaceID, Filename: filename})
	return Upload(row), notFound("upload", err)
}

// UploadContent returns the bytes of an upload.
func (q *queries) UploadContent(ctx context.Context, workspaceID, id uuid.UUID) ([]byte, error) {
	b, err := q.sql.UploadContent(ctx, q.db, dbsqlc.UploadContentParams{WorkspaceID: workspaceID, ID: id})
	return b, notFound("upload", err)
}

// SourceText returns the text of a manual_text source ("" for other types).
func (q *queries) SourceText(ctx context.Context, workspaceID, id uuid.UUID) (string, error) {
	t, err := q.sql.SourceText(ctx, q.db, dbsqlc.SourceTextParams{WorkspaceID: workspaceID, ID: id})
	return t, notFound("knowledge source", err)
}

// ClaimWaitingSources gives an upload to the workspace's pending file sources whose path is
// its filename and that had none yet; it returns their ids, whose ingestion can now run.
func (q *queries) ClaimWaitingSources(ctx context.Context, workspaceID uuid.UUID, u Upload) ([]uuid.UUID, error) {
	return q.sql.ClaimWaitingSources(ctx, q.db, dbsqlc.ClaimWaitingSourcesParams{WorkspaceID: workspaceID, UploadID: &u.ID, Path: u.Filename})
}
