// Package recordings keeps the audio clips of a workspace that calls play: disclosure clips
// (an agent's disclosureRecordingId) and voicemail drops (left by voice campaigns on an
// answering machine). An upload is WAV (PCM) or MP3 of at most MaxBytes and MaxDuration,
// whose format and duration are read from the file by a decoder (go-audio/wav,
// hajimehoshi/go-mp3), never taken from the client. The carrier fetches a clip from an
// unguessable URL, PUBLIC_BASE_URL/media/recordings/{token}.{ext}, that no listing shows.
package recordings

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/manage"
	"switchboard/store"
)

// Limits of an upload.
const (
	MaxBytes    = 5 << 20
	MaxDuration = 120 * time.Second
	maxName     = 100
)

// Service keeps recordings.
type Service struct{ store *store.Store }

// New returns the recordings service.
func New(st *store.Store) *Service { return &Service{store: st} }

// View is a recording as /api answers it.
type View struct {
	ID         uuid.UUID `json:"id"`
	Object     string    `json:"object"`
	Kind       string    `json:"kind"`
	Name       string    `json:"name"`
	DurationMS int       `json:"duration_ms"`
	Format     string    `json:"format"`
	SizeBytes  int       `json:"size_bytes"`
	CreatedAt  time.Time `json:"created_at"`
}

func view(r store.Recording) View {
	return View{ID: r.ID, Object: "recording", Kind: r.Kind, Name: r.Name, DurationMS: r.DurationMS, Format: r.Format,
		SizeBytes: r.SizeBytes, CreatedAt: r.CreatedAt}
}

// Upload is a recording to store. TooLarge says the file had more than MaxBytes (its bytes
// were not kept).
type Upload struct {
	Kind, Name string
	Data       []byte
	TooLarge   bool
}

// Create checks and stores an upload: the kind, the name, then the file (size, format,
// duration). Nothing is written when one of them is wrong.
func (s *Service) Create(ctx context.Context, ws uuid.UUID, in Upload) (View, error) {
	if !slices.Contains(manage.RecordingKinds(), in.Kind) {
		return View{}, apierr.Invalid("kind", "invalid_value", "kind must be one of %s.", strings.Join(manage.RecordingKinds(), ", "))
	}
	name := strings.TrimSpace(in.Name)
	if name == "" || utf8.RuneCountInString(name) > maxName {
		return View{}, apierr.Invalid("name", "invalid_value", "name must be 1 to %d characters.", maxName)
	}
	if in.TooLarge || len(in.Data) > MaxBytes {
		return View{}, &apierr.Error{Kind: apierr.KindTooLarge, Code: "recording_too_large", Param: "file",
			Message: "file is over 5 MiB: a recording is at most 5 MiB and 120 seconds."}
	}
	if len(in.Data) == 0 {
		return View{}, apierr.Invalid("file", "empty_file", "file is empty.")
	}
	format, length, err := probe(in.Data)
	if err != nil {
		return View{}, err
	}
	if length > MaxDuration {
		return View{}, apierr.Invalid("file", "recording_too_long", "file is %s long: a recording is at most 120 seconds.", length.Round(time.Second))
	}
	r, err := s.store.InsertRecording(ctx, ws, store.NewRecording{Kind: in.Kind, Name: name, Format: format,
		DurationMS: int(length.Milliseconds()), Audio: in.Data})
	if err != nil {
		return View{}, err
	}
	return view(r), nil
}

// Get returns one recording of the workspace.
func (s *Service) Get(ctx context.Context, ws, id uuid.UUID) (View, error) {
	r, err := s.store.RecordingByID(ctx, ws, id)
	if err != nil {
		return View{}, apierr.WithParam(err, "id")
	}
	return view(r), nil
}

// List lists the workspace's recordings, newest first.
func (s *Service) List(ctx context.Context, ws uuid.UUID) ([]View, error) {
	list, err := s.store.ListRecordings(ctx, ws)
	if err != nil {
		return nil, err
	}
	out := make([]View, 0, len(list))
	for _, r := range list {
		out = append(out, view(r))
	}
	return out, nil
}

// Deleted is the answer to a deletion.
type Deleted struct {
	ID      uuid.UUID `json:"id"`
	Object  string    `json:"object"`
	Deleted bool      `json:"deleted"`
}

// Delete removes a recording, unless an agent plays it as its disclosure or a campaign that
// is not over (draft, scheduled, running, paused) leaves it as its voicemail drop (409,
// naming them). A completed or cancelled campaign's voicemail_recording_id becomes null.
func (s *Service) Delete(ctx context.Context, ws, id uuid.UUID) (Deleted, error) {
	if _, err := s.store.RecordingByID(ctx, ws, id); err != nil {
		return Deleted{}, apierr.WithParam(err, "id")
	}
	users, err := s.store.RecordingUsers(ctx, ws, id)
	if err != nil {
		return Deleted{}, err
	}
	if len(users) > 0 {
		return Deleted{}, apierr.Conflict("recording_in_use", "The recording is the disclosure of %s: set their disclosureRecordingId to another recording or null first.",
			quoteAll(users))
	}
	camps, err := s.store.RecordingCampaigns(ctx, ws, id)
	if err != nil {
		return Deleted{}, err
	}
	if len(camps) > 0 {
		return Deleted{}, apierr.Conflict("recording_in_use", "The recording is the voicemail drop of the campaign(s) %s, which are not over: set their voicemail_recording_id to another recording, or cancel them, first.",
			quoteAll(camps))
	}
	if err := s.store.DeleteRecording(ctx, ws, id); err != nil {
		return Deleted{}, apierr.WithParam(err, "id")
	}
	return Deleted{ID: id, Object: "recording.deleted", Deleted: true}, nil
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = `"` + n + `"`
	}
	return strings.Join(q, ", ")
}

// Media is a recording's audio and content type for its media URL's file name
// ({token}.{ext}); a token that names nothing, or the wrong extension, is not found.
func (s *Service) Media(ctx context.Context, file string) (contentType string, audio []byte, err error) {
	token, ext, ok := strings.Cut(file, ".")
	if !ok || token == "" {
		return "", nil, apierr.NotFound("", "not_found", "No such recording.")
	}
	format, audio, err := s.store.RecordingMedia(ctx, token)
	if errors.Is(err, store.ErrNotFound) || err == nil && format != ext {
		return "", nil, apierr.NotFound("", "not_found", "No such recording.")
	}
	if err != nil {
		return "", nil, err
	}
	return ContentType(format), audio, nil
}
