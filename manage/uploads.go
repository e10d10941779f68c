package manage

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"switchboard/apierr"
	"switchboard/knowledge"
	"switchboard/store"
)

// MaxUploadBytes is the largest file POST /api/uploads stores.
const MaxUploadBytes = 10 << 20

// UploadInput is a file to store: its name, its declared content type and its bytes (the
// caller reads at most MaxUploadBytes+1 of them, and sets TooLarge when there were more).
type UploadInput struct {
	Filename    string
	ContentType string
	Data        []byte
	TooLarge    bool
}

// UploadView is an upload as /api shows it.
type UploadView struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	Filename      string   `json:"filename"`
	ContentType   string   `json:"contentType"`
	Bytes         int      `json:"bytes"`
	SHA256        string   `json:"sha256"`
	CreatedAt     string   `json:"createdAt"`
	QueuedSources []string `json:"queuedSources"`
}

func uploadView(u store.Upload, queued []uuid.UUID) UploadView {
	v := UploadView{ID: u.ShortID, Object: "upload", Filename: u.Filename, ContentType: u.ContentType, Bytes: u.Bytes,
		SHA256: u.SHA256, CreatedAt: rfc3339(u.CreatedAt), QueuedSources: []string{}}
	for _, id := range queued {
		v.QueuedSources = append(v.QueuedSources, id.String())
	}
	return v
}

// CreateUpload checks and stores a file, and, in the same transaction, queues the ingestion
// of the workspace's pending sources that named its filename and were waiting for it.
func (s *Service) CreateUpload(ctx context.Context, ws uuid.UUID, in UploadInput) (UploadView, error) {
	name, err := knowledge.CleanFilename(in.Filename)
	if err != nil {
		return UploadView{}, apierr.Invalid("filename", "invalid_filename", "%v.", err)
	}
	contentType, err := knowledge.ContentTypeFor(in.ContentType, name)
	if err != nil {
		return UploadView{}, &apierr.Error{Kind: apierr.KindUnsupportedMediaType, Param: "Content-Type", Code: "unsupported_media_type",
			Message: "The file's type is not accepted (" + err.Error() + ")."}
	}
	switch {
	case in.TooLarge || len(in.Data) > MaxUploadBytes:
		return UploadView{}, &apierr.Error{Kind: apierr.KindTooLarge, Param: "file", Code: "upload_too_large",
			Message: "The file is larger than the " + strconv.Itoa(MaxUploadBytes>>20) + " MiB upload limit."}
	case len(in.Data) == 0:
		return UploadView{}, apierr.Invalid("file", "empty_file", "The file is empty.")
	case contentType == knowledge.PDF && !bytes.HasPrefix(bytes.TrimLeft(in.Data, "\x00\t\r\n "), []byte("%PDF-")):
		return UploadView{}, apierr.Invalid("file", "invalid_pdf", "The file is sent as application/pdf but is not a PDF.")
	case (contentType == knowledge.TextPlain || contentType == knowledge.TextMarkdown) && (!utf8.Valid(in.Data) || bytes.IndexByte(in.Data, 0) >= 0):
		return UploadView{}, apierr.Invalid("file", "invalid_encoding", "The file is not UTF-8 text; save it as UTF-8 and upload it again.")
	}
	var u store.Upload
	var queued []uuid.UUID
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		if u, err = tx.CreateUpload(ctx, ws, store.NewUpload{Filename: name, ContentType: contentType, Content: in.Data}); err != nil {
			return err
		}
		if queued, err = tx.ClaimWaitingSources(ctx, ws, u); err != nil || len(queued) == 0 {
			return err
		}
		jobs := make([]river.InsertManyParams, len(queued))
		for i, id := range queued {
			jobs[i] = river.InsertManyParams{Args: IngestArgs{WorkspaceID: ws, SourceID: id}}
		}
		_, err := s.jobs.InsertManyTx(ctx, tx.Pgx(), jobs)
		return err
	})
	if err != nil {
		return UploadView{}, err
	}
	return uploadView(u, queued), nil
}

// GetUpload returns an upload's metadata by its public id.
func (s *Service) GetUpload(ctx context.Context, ws uuid.UUID, id string) (UploadView, error) {
	u, err := s.store.UploadByShortID(ctx, ws, id)
	if errors.Is(err, store.ErrNotFound) {
		return UploadView{}, apierr.NotFound("id", "upload_not_found", "No upload with that id in this workspace.")
	}
	if err != nil {
		return UploadView{}, err
	}
	return uploadView(u, nil), nil
}
