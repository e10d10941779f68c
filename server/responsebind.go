package server

import (
	"encoding/json"

	"github.com/labstack/echo/v4"
	"github.com/oapi-codegen/runtime"

	"switchboard/gen/v1api"
)

// responseFromValidated serves POST /v1/responses from the value the request validator
// decoded and validated, as chatFromValidated serves chat completions: the generated wrapper
// would decode the body again (its UnmarshalJSON goes through a map of raw members, then
// each member), a twentieth of a stored turn's CPU in the server. The Idempotency-Key header
// is bound as the generated wrapper binds it; anything unexpected (a repeated header, a body
// the builder does not recognise) falls back to the generated wrapper and its answers.
func (h *v1Handlers) responseFromValidated(generated echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vb, ok := c.Request().Body.(validatedBody)
		if !ok {
			return generated(c)
		}
		params, ok := responseParamsOf(c)
		if !ok {
			return generated(c)
		}
		body, ok := responseRequestOf(vb.ValidatedValue())
		if !ok {
			return generated(c)
		}
		res, err := h.CreateResponse(c.Request().Context(), v1api.CreateResponseRequestObject{Params: params, Body: body})
		if err != nil {
			return err
		}
		if res == nil {
			return nil
		}
		return res.VisitCreateResponseResponse(c.Response())
	}
}

// responseParamsOf binds the optional Idempotency-Key header as the generated wrapper does.
func responseParamsOf(c echo.Context) (v1api.CreateResponseParams, bool) {
	var params v1api.CreateResponseParams
	values := c.Request().Header.Values("Idempotency-Key")
	switch len(values) {
	case 0:
		return params, true
	case 1:
		var key v1api.IdempotencyKey
		if runtime.BindStyledParameterWithOptions("simple", "Idempotency-Key", values[0], &key,
			runtime.BindStyledParameterOptions{ParamLocation: runtime.ParamLocationHeader, Type: "string"}) != nil {
			return params, false
		}
		params.IdempotencyKey = &key
		return params, true
	}
	return params, false
}

// responseRequestOf builds the request body from a decoded JSON value, as
// CreateResponseRequest.UnmarshalJSON would from the same JSON; false when the value has a
// shape the schema does not allow.
func responseRequestOf(v any) (*v1api.CreateResponseRequest, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	var body v1api.CreateResponseRequest
	for name, member := range obj {
		switch name {
		case "input":
			raw, err := json.Marshal(member) // a string or an array of items: kept as JSON
			if err != nil || body.Input.UnmarshalJSON(raw) != nil {
				return nil, false
			}
		case "model":
			body.Model, ok = optString[v1api.ModelId](member)
		case "instructions":
			body.Instructions, ok = optString[string](member)
		case "previous_response_id":
			body.PreviousResponseId, ok = optString[string](member)
		case "background":
			body.Background, ok = optBool(member)
		case "store":
			body.Store, ok = optBool(member)
		case "stream":
			body.Stream, ok = optBool(member)
		default:
			if body.AdditionalProperties == nil {
				body.AdditionalProperties = map[string]any{}
			}
			body.AdditionalProperties[name] = plainJSON(member)
		}
		if !ok {
			return nil, false
		}
	}
	return &body, true
}
