package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"switchboard/store/internal/dbsqlc"
)

// Recording is an uploaded audio clip of a workspace (package recordings), without its audio.
type Recording struct {
	ID          uuid.UUID
	WorkspaceID uuid.UUID
	Kind        string // disclosure or voicemail_drop
	Name        string
	Format      string // wav or mp3; "" for a record made without audio
	DurationMS  int
	SizeBytes   int
	MediaToken  string // the secret part of the URL the carrier fetches it from
	CreatedAt   time.Time
}

func recording(r dbsqlc.RecordingByIDRow) Recording {
	out := Recording{ID: r.ID, WorkspaceID: r.WorkspaceID, Kind: r.Kind, Name: r.Name, MediaToken: r.MediaToken, CreatedAt: r.CreatedAt}
	if r.Format != nil {
		out.Format = *r.Format
	}
	if r.DurationMs != nil {
		out.DurationMS = *r.DurationMs
	}
	if r.SizeBytes != nil {
		out.SizeBytes = *r.SizeBytes
	}
	return out
}

// NewRecording is an upload whose audio was checked.
type NewRecording struct {
	Kind, Name, Format string
	DurationMS         int
	Audio              []byte
}

// InsertRecording stores an uploaded recording with its audio.
func (q *queries) InsertRecording(ctx context.Context, workspaceID uuid.UUID, r NewRecording) (Recording, error) {
	size := len(r.Audio)
	row, err := q.sql.InsertRecording(ctx, q.db, dbsqlc.InsertRecordingParams{WorkspaceID: workspaceID, Kind: r.Kind, Name: r.Name,
		Format: &r.Format, DurationMs: &r.DurationMS, SizeBytes: &size, Audio: r.Audio})
	return recording(dbsqlc.RecordingByIDRow(row)), err
}

// RecordingByID reads a recording of the workspace.
func (q *queries) RecordingByID(ctx context.Context, workspaceID, id uuid.UUID) (Recording, error) {
	row, err := q.sql.RecordingByID(ctx, q.db, dbsqlc.RecordingByIDParams{WorkspaceID: workspaceID, ID: id})
	return recording(row), notFound("recording", err)
}

// ListRecordings lists the workspace's recordings, newest first.
func (q *queries) ListRecordings(ctx context.Context, workspaceID uuid.UUID) ([]Recording, error) {
	rows, err := q.sql.ListRecordings(ctx, q.db, workspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]Recording, 0, len(rows))
	for _, r := range rows {
		out = append(out, recording(dbsqlc.RecordingByIDRow(r)))
	}
	return out, nil
}

// RecordingMedia is a recording's audio and format, by the token of its media URL.
func (q *queries) RecordingMedia(ctx context.Context, token string) (format string, audio []byte, err error) {
	row, err := q.sql.RecordingMedia(ctx, q.db, token)
	if err != nil {
		return "", nil, notFound("recording", err)
	}
	if row.Format != nil {
		format = *row.Format
	}
	return format, row.Audio, nil
}

// RecordingUsers names the agents whose disclosure the recording is.
func (q *queries) RecordingUsers(ctx context.Context, workspaceID, id uuid.UUID) ([]string, error) {
	return q.sql.RecordingUsers(ctx, q.db, dbsqlc.RecordingUsersParams{WorkspaceID: workspaceID, ID: &id})
}

// RecordingCampaigns names the campaigns not over whose voicemail drop the recording is.
func (q *queries) RecordingCampaigns(ctx context.Context, workspaceID, id uuid.UUID) ([]string, error) {
	return q.sql.RecordingCampaigns(ctx, q.db, dbsqlc.RecordingCampaignsParams{WorkspaceID: workspaceID, ID: &id})
}

// DeleteRecording deletes a recording of the workspace.
func (q *queries) DeleteRecording(ctx context.Context, workspaceID, id uuid.UUID) error {
	n, err := q.sql.DeleteRecording(ctx, q.db, dbsqlc.DeleteRecordingParams{WorkspaceID: workspaceID, ID: id})
	return affected("recording", n, err)
}
