package server

import (
	"context"
	"encoding/json"
	"strings"

	"switchboard/gen/apiapi"
	"switchboard/phonenumbers"
)

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
