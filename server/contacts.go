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
	"switchboard/contacts"
	"switchboard/gen/apiapi"
)

// contactsImportRoute reads its own multipart body (like uploads): the JSON body machinery
// does not apply to it.
const contactsImportRoute = "/api/contacts/import"

func (h *apiHandlers) ListContacts(ctx context.Context, req apiapi.ListContactsRequestObject) (apiapi.ListContactsResponseObject, error) {
	p := req.Params
	f := contacts.Filter{ListID: p.ListId, ConsentSMS: p.ConsentSms, ConsentCalls: p.ConsentCalls}
	if p.Tag != nil {
		f.Tag = *p.Tag
	}
	if p.Q != nil {
		f.Query = *p.Q
	}
	if p.Deleted != nil {
		f.Deleted = *p.Deleted
	}
	if p.Limit != nil {
		f.Limit = *p.Limit
	}
	if p.After != nil {
		f.After = p.After.String()
	}
	out, err := h.s.contacts.List(ctx, workspaceOf(ctx), f)
	if err != nil {
		return nil, err
	}
	return apiapi.ListContacts200JSONResponse(out), nil
}

func (h *apiHandlers) CreateContact(ctx context.Context, req apiapi.CreateContactRequestObject) (apiapi.CreateContactResponseObject, error) {
	out, err := h.s.contacts.Create(ctx, workspaceOf(ctx), *req.Body)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateContact201JSONResponse(out), nil
}

func (h *apiHandlers) GetContact(ctx context.Context, req apiapi.GetContactRequestObject) (apiapi.GetContactResponseObject, error) {
	out, err := h.s.contacts.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetContact200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateContact(ctx context.Context, req apiapi.UpdateContactRequestObject) (apiapi.UpdateContactResponseObject, error) {
	out, err := h.s.contacts.Update(ctx, workspaceOf(ctx), req.Id, rawBody(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateContact200JSONResponse(out), nil
}

func (h *apiHandlers) DeleteContact(ctx context.Context, req apiapi.DeleteContactRequestObject) (apiapi.DeleteContactResponseObject, error) {
	out, err := h.s.contacts.Delete(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.DeleteContact200JSONResponse(out), nil
}

func (h *apiHandlers) RestoreContact(ctx context.Context, req apiapi.RestoreContactRequestObject) (apiapi.RestoreContactResponseObject, error) {
	out, err := h.s.contacts.Restore(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.RestoreContact200JSONResponse(out), nil
}

func (h *apiHandlers) ListContactLists(ctx context.Context, _ apiapi.ListContactListsRequestObject) (apiapi.ListContactListsResponseObject, error) {
	out, err := h.s.contacts.Lists(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.ListContactLists200JSONResponse(out), nil
}

// ImportContacts reads the multipart body: the CSV in part `file`, an optional `list`.
func (h *apiHandlers) ImportContacts(ctx context.Context, req apiapi.ImportContactsRequestObject) (apiapi.ImportContactsResponseObject, error) {
	if req.Body == nil {
		return nil, apierr.Invalid("file", "missing_file", "Send multipart/form-data with the CSV in a part named file.")
	}
	var data []byte
	var list string
	for range 16 {
		part, err := req.Body.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badMultipart(err)
		}
		switch part.FormName() {
		case "file":
			if data, err = readBody(io.LimitReader(part, contacts.MaxImportBytes+1)); err != nil {
				return nil, badMultipart(err)
			}
			if len(data) > contacts.MaxImportBytes {
				return nil, &apierr.Error{Kind: apierr.KindTooLarge, Param: "file", Code: "upload_too_large", Message: "A contact import takes at most 5 MiB; split the file."}
			}
		case "list":
			v, err := readBody(io.LimitReader(part, 1024))
			if err != nil {
				return nil, badMultipart(err)
			}
			list = string(v)
		default:
			_, _ = io.Copy(io.Discard, io.LimitReader(part, maxMultipartOverhead))
		}
	}
	if data == nil {
		return nil, apierr.Invalid("file", "missing_file", "The multipart body has no part named file.")
	}
	out, err := h.s.contacts.Import(ctx, workspaceOf(ctx), data, list)
	if err != nil {
		return nil, err
	}
	return apiapi.ImportContacts200JSONResponse(out), nil
}

// importMultipart checks, before the generated handler reads it, that the import's body is
// multipart with a boundary (the generated code would fail with a bare error otherwise).
func importMultipart(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Method != http.MethodPost || c.Path() != contactsImportRoute {
			return next(c)
		}
		mt, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
		if err != nil || !strings.EqualFold(mt, "multipart/form-data") {
			return &apierr.Error{Kind: apierr.KindUnsupportedMediaType, Param: "Content-Type", Code: "unsupported_media_type",
				Message: "Send the CSV as multipart/form-data with a part named file (curl -F file=@contacts.csv)."}
		}
		if params["boundary"] == "" {
			return apierr.Invalid("Content-Type", "invalid_multipart", "The multipart/form-data Content-Type has no boundary.")
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, contacts.MaxImportBytes+maxMultipartOverhead)
		return next(c)
	}
}
