package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/gen/apiapi"
	"switchboard/manage"
)

// uploadRoute is the one /api route whose body is a file, not JSON: the general body limit,
// the JSON input guard, the raw-body copy and the request validator do not apply to it
// (skipForUploads); CreateUpload reads the body itself, at most manage.MaxUploadBytes+1 bytes
// of the file, and answers 413, 415 and 400 with their own codes.
const uploadRoute = "/api/uploads"

// skipForUploads runs mw for every route but POST /api/uploads.
func skipForUploads(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		wrapped := mw(next)
		return func(c echo.Context) error {
			if c.Request().Method == http.MethodPost && (c.Path() == uploadRoute || c.Path() == contactsImportRoute || c.Path() == recordingsRoute) {
				return next(c)
			}
			return wrapped(c)
		}
	}
}

// maxMultipartOverhead bounds what a multipart upload may carry beside the file: part
// headers and small form fields.
const maxMultipartOverhead = 64 << 10

func (h *apiHandlers) CreateUpload(ctx context.Context, req apiapi.CreateUploadRequestObject) (apiapi.CreateUploadResponseObject, error) {
	in, err := readUpload(req)
	if err != nil {
		return nil, err
	}
	out, err := h.s.ops.CreateUpload(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateUpload201JSONResponse(out), nil
}

func (h *apiHandlers) GetUpload(ctx context.Context, req apiapi.GetUploadRequestObject) (apiapi.GetUploadResponseObject, error) {
	out, err := h.s.ops.GetUpload(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetUpload200JSONResponse(out), nil
}

// readUpload reads the file of an upload request: the `file` part of a multipart body, or
// the raw body with the `filename` query parameter.
func readUpload(req apiapi.CreateUploadRequestObject) (manage.UploadInput, error) {
	mediaType, params, _ := mime.ParseMediaType(req.ContentType)
	if !strings.EqualFold(mediaType, "multipart/form-data") {
		in := manage.UploadInput{ContentType: req.ContentType}
		if req.Params.Filename != nil {
			in.Filename = *req.Params.Filename
		}
		if in.Filename == "" {
			return in, apierr.Invalid("filename", "missing_filename", "Name the file: ?filename=faq.md (or send multipart/form-data with a file part).")
		}
		var err error
		in.Data, in.TooLarge, err = readLimited(req.Body)
		return in, err
	}
	if params["boundary"] == "" {
		return manage.UploadInput{}, apierr.Invalid("Content-Type", "invalid_multipart", "The multipart/form-data Content-Type has no boundary.")
	}
	mr := multipart.NewReader(io.LimitReader(req.Body, manage.MaxUploadBytes+maxMultipartOverhead+1), params["boundary"])
	for range 16 {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return manage.UploadInput{}, badMultipart(err)
		}
		if part.FormName() != "file" {
			_, _ = io.Copy(io.Discard, io.LimitReader(part, maxMultipartOverhead))
			continue
		}
		in := manage.UploadInput{Filename: partFilename(part), ContentType: part.Header.Get("Content-Type")}
		if in.Filename == "" {
			return in, apierr.Invalid("file", "missing_filename", "The file part has no filename.")
		}
		in.Data, in.TooLarge, err = readLimited(part)
		if err != nil {
			return in, badMultipart(err)
		}
		return in, nil
	}
	return manage.UploadInput{}, apierr.Invalid("file", "missing_file", "The multipart body has no part named file.")
}

// readLimited reads at most manage.MaxUploadBytes bytes, and says whether there were more.
func readLimited(r io.Reader) ([]byte, bool, error) {
	if r == nil {
		return nil, false, nil
	}
	data, err := readBody(io.LimitReader(r, manage.MaxUploadBytes+1))
	if err != nil {
		return nil, false, err
	}
	if len(data) > manage.MaxUploadBytes {
		return nil, true, nil
	}
	return data, false, nil
}

func badMultipart(err error) error {
	if e := apierr.As(err); e != nil {
		return e
	}
	return apierr.Invalid("file", "invalid_multipart", "The multipart/form-data body cannot be read: %v.", err)
}

// partFilename is the filename a part gives, as given: multipart.Part.FileName keeps only
// its last element, and an upload's name may be a relative path (kb/faq.md).
func partFilename(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}
