package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/gen/apiapi"
	"switchboard/recordings"
)

// recordingsRoute reads its own multipart body (like uploads): the JSON body machinery does
// not apply to it.
const recordingsRoute = "/api/recordings"

// recordingsMultipart refuses a recording upload that is not multipart/form-data, and bounds
// its body to the largest recording and its form fields.
func recordingsMultipart(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodPost || c.Path() != recordingsRoute {
			return next(c)
		}
		mt, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if err != nil || !strings.EqualFold(mt, "multipart/form-data") {
			return &apierr.Error{Kind: apierr.KindUnsupportedMediaType, Param: "Content-Type", Code: "unsupported_media_type",
				Message: "Send the recording as multipart/form-data with the parts file, kind and name (curl -F file=@notice.wav -F kind=disclosure -F name=Notice)."}
		}
		if params["boundary"] == "" {
			return apierr.Invalid("Content-Type", "invalid_multipart", "The multipart/form-data Content-Type has no boundary.")
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, recordings.MaxBytes+maxMultipartOverhead)
		return next(c)
	}
}

func (h *apiHandlers) ListRecordings(ctx context.Context, _ apiapi.ListRecordingsRequestObject) (apiapi.ListRecordingsResponseObject, error) {
	list, err := h.s.recs.List(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.ListRecordings200JSONResponse{Object: "list", Data: list}, nil
}

func (h *apiHandlers) CreateRecording(ctx context.Context, req apiapi.CreateRecordingRequestObject) (apiapi.CreateRecordingResponseObject, error) {
	in, err := readRecording(req)
	if err != nil {
		return nil, err
	}
	out, err := h.s.recs.Create(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateRecording201JSONResponse(out), nil
}

// readRecording reads the parts of an upload: file (at most MaxBytes are kept; more is
// TooLarge), kind and name.
func readRecording(req apiapi.CreateRecordingRequestObject) (recordings.Upload, error) {
	var in recordings.Upload
	seenFile := false
	for range 16 {
		part, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return in, recordingBodyError(err)
		}
		switch part.FormName() {
		case "file":
			seenFile = true
			data, err := io.ReadAll(io.LimitReader(part, recordings.MaxBytes+1))
			if err != nil {
				return in, recordingBodyError(err)
			}
			if len(data) > recordings.MaxBytes {
				in.TooLarge = true
				data = nil
			}
			in.Data = data
		case "kind", "name":
			v, err := io.ReadAll(io.LimitReader(part, 1024))
			if err != nil {
				return in, recordingBodyError(err)
			}
			if part.FormName() == "kind" {
				in.Kind = strings.TrimSpace(string(v))
			} else {
				in.Name = string(v)
			}
		default:
			_, _ = io.Copy(io.Discard, io.LimitReader(part, maxMultipartOverhead))
		}
	}
	if !seenFile {
		return in, apierr.Invalid("file", "missing_file", "The multipart body has no part named file.")
	}
	return in, nil
}

// recordingBodyError is a body over the limit (413), or one that is not readable multipart.
func recordingBodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apierr.Error{Kind: apierr.KindTooLarge, Code: "recording_too_large", Param: "file",
			Message: "file is over 5 MiB: a recording is at most 5 MiB and 120 seconds."}
	}
	return badMultipart(err)
}

func (h *apiHandlers) GetRecording(ctx context.Context, req apiapi.GetRecordingRequestObject) (apiapi.GetRecordingResponseObject, error) {
	out, err := h.s.recs.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetRecording200JSONResponse(out), nil
}

func (h *apiHandlers) DeleteRecording(ctx context.Context, req apiapi.DeleteRecordingRequestObject) (apiapi.DeleteRecordingResponseObject, error) {
	out, err := h.s.recs.Delete(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.DeleteRecording200JSONResponse(out), nil
}

// routeMedia serves recordings to the carrier (a <Play> of a disclosure or a voicemail
// drop): no key, the unguessable token in the file name is the credential, and nothing lists
// these URLs.
func (s *Server) routeMedia(e *echo.Echo) {
	if s.recs == nil {
		return
	}
	e.GET("/media/recordings/:file", s.media)
	e.HEAD("/media/recordings/:file", s.media)
}

func (s *Server) media(c echo.Context) error {
	contentType, audio, err := s.recs.Media(c.Request().Context(), c.Param("file"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "private, max-age=300")
	c.Response().Header().Set("X-Content-Type-Options", "nosniff")
	return c.Blob(http.StatusOK, contentType, audio)
}
