package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/access"
	"switchboard/apierr"
	"switchboard/campaigns"
	"switchboard/contacts"
	"switchboard/gen/apiapi"
	"switchboard/phonenumbers"
)

// contactsImportRoute reads its own multipart body (like uploads): the JSON body machinery
// does not apply to it.
const contactsImportRoute = "/api/contacts/import"

// campaignsSlash serves the product spec's spelling `POST /api/campaigns/` as
// `/api/campaigns`.
func campaignsSlash(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); r.URL.Path == "/api/campaigns/" {
			r.URL.Path = "/api/campaigns"
			if r.URL.RawPath != "" {
				r.URL.RawPath = "/api/campaigns"
			}
		}
		return next(c)
	}
}

// outboundGate is the campaign gate: a non-draft create and a start answer 409
// `{"error": "outbound_compliance_required", "version": ...}` until an owner or admin of
// the workspace accepted the current compliance version. The order is the contract's:
// authentication, then the role, then this gate, then the request validator. The route's
// own permission (authorize) covers start; a non-draft create is a launch too, so its
// launching role is checked here, before the gate: a member learns 403, never 409.
func (s *Server) outboundGate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		gated := r.Method == http.MethodPost && (c.Path() == "/api/campaigns/:id/start" || c.Path() == "/api/campaigns" && !draftBody(r.Context()))
		if !gated || s.campaigns == nil {
			return next(c)
		}
		p, _ := principalFrom(r.Context())
		if err := access.Check(p.Access(), access.CampaignsStart, "Launching a campaign (POST "+c.Path()+" without draft: true)"); err != nil {
			return err
		}
		err := s.campaigns.Gate(r.Context(), workspaceOf(r.Context()))
		var gate *campaigns.GateError
		if errors.As(err, &gate) {
			return c.JSON(http.StatusConflict, map[string]string{"error": "outbound_compliance_required", "version": gate.Version})
		}
		if err != nil {
			return err
		}
		return next(c)
	}
}

// draftBody reports whether the request body (kept by keepRawBody) is a JSON object with
// `draft: true`; anything else is a launch, which the gate checks.
func draftBody(ctx context.Context) bool {
	raw, _ := ctx.Value(rawBodyKey{}).([]byte)
	var body struct {
		Draft *bool `json:"draft"`
	}
	return json.Unmarshal(raw, &body) == nil && body.Draft != nil && *body.Draft
}

func rawBody(ctx context.Context) json.RawMessage {
	raw, _ := ctx.Value(rawBodyKey{}).([]byte)
	return raw
}

// Contacts.

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

// Campaigns.

func (h *apiHandlers) ListCampaigns(ctx context.Context, req apiapi.ListCampaignsRequestObject) (apiapi.ListCampaignsResponseObject, error) {
	status := ""
	if req.Params.Status != nil {
		status = string(*req.Params.Status)
	}
	out, err := h.s.campaigns.List(ctx, workspaceOf(ctx), status, req.Params.AgentId)
	if err != nil {
		return nil, err
	}
	return apiapi.ListCampaigns200JSONResponse(out), nil
}

func (h *apiHandlers) CreateCampaign(ctx context.Context, req apiapi.CreateCampaignRequestObject) (apiapi.CreateCampaignResponseObject, error) {
	p, _ := principalFrom(ctx)
	out, err := h.s.campaigns.Create(ctx, p.WorkspaceID, p.Access(), *req.Body)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateCampaign201JSONResponse(out), nil
}

func (h *apiHandlers) GetCampaign(ctx context.Context, req apiapi.GetCampaignRequestObject) (apiapi.GetCampaignResponseObject, error) {
	out, err := h.s.campaigns.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetCampaign200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateCampaign(ctx context.Context, req apiapi.UpdateCampaignRequestObject) (apiapi.UpdateCampaignResponseObject, error) {
	out, err := h.s.campaigns.Update(ctx, workspaceOf(ctx), req.Id, rawBody(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateCampaign200JSONResponse(out), nil
}

func (h *apiHandlers) StartCampaign(ctx context.Context, req apiapi.StartCampaignRequestObject) (apiapi.StartCampaignResponseObject, error) {
	out, err := h.s.campaigns.Start(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.StartCampaign200JSONResponse(out), nil
}

func (h *apiHandlers) PauseCampaign(ctx context.Context, req apiapi.PauseCampaignRequestObject) (apiapi.PauseCampaignResponseObject, error) {
	out, err := h.s.campaigns.Pause(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.PauseCampaign200JSONResponse(out), nil
}

func (h *apiHandlers) CancelCampaign(ctx context.Context, req apiapi.CancelCampaignRequestObject) (apiapi.CancelCampaignResponseObject, error) {
	out, err := h.s.campaigns.Cancel(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.CancelCampaign200JSONResponse(out), nil
}

// Phone numbers.

func (h *apiHandlers) ListPhoneNumbers(ctx context.Context, req apiapi.ListPhoneNumbersRequestObject) (apiapi.ListPhoneNumbersResponseObject, error) {
	status := ""
	if req.Params.Status != nil {
		status = string(*req.Params.Status)
	}
	out, err := h.s.phones.List(ctx, workspaceOf(ctx), status)
	if err != nil {
		return nil, err
	}
	return apiapi.ListPhoneNumbers200JSONResponse(out), nil
}

func (h *apiHandlers) SearchPhoneNumbers(ctx context.Context, req apiapi.SearchPhoneNumbersRequestObject) (apiapi.SearchPhoneNumbersResponseObject, error) {
	p := req.Params
	in := phonenumbers.SearchInput{Country: p.Country}
	if p.AreaCode != nil {
		in.AreaCode = *p.AreaCode
	}
	if p.Contains != nil {
		in.Contains = *p.Contains
	}
	if p.Limit != nil {
		in.Limit = *p.Limit
	}
	out, err := h.s.phones.Search(ctx, in)
	if err != nil {
		return nil, err
	}
	return apiapi.SearchPhoneNumbers200JSONResponse(out), nil
}

// BuyPhoneNumber parks the purchase, as the spec says a spend action does: the checks run
// now, the buying once POST /api/confirmations/{id} sends the code. The parked action is the
// builder assistant's buy_phone_number, so a purchase is confirmed one way on every surface.
func (h *apiHandlers) BuyPhoneNumber(ctx context.Context, req apiapi.BuyPhoneNumberRequestObject) (apiapi.BuyPhoneNumberResponseObject, error) {
	b := req.Body
	in := phonenumbers.BuyInput{PhoneNumber: b.PhoneNumber, Country: b.Country, ConfirmPrice: b.ConfirmPrice}
	if err := h.s.phones.CheckPurchase(ctx, workspaceOf(ctx), in); err != nil {
		return nil, err
	}
	args, err := json.Marshal(map[string]string{"phone_number": strings.TrimSpace(b.PhoneNumber), "country": b.Country})
	if err != nil {
		return nil, err
	}
	parked, err := h.s.park(ctx, "buy_phone_number", args)
	if err != nil {
		return nil, err
	}
	return apiapi.BuyPhoneNumber202JSONResponse(parked), nil
}

func (h *apiHandlers) ReleasePhoneNumber(ctx context.Context, req apiapi.ReleasePhoneNumberRequestObject) (apiapi.ReleasePhoneNumberResponseObject, error) {
	out, err := h.s.phones.Release(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.ReleasePhoneNumber200JSONResponse(out), nil
}
