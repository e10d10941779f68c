package server

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchboard/gen/v1api"
)

// chatCompletionsPath and responsesPath are the routes whose POST body is bound from the
// validator's value (chatFromValidated, responseFromValidated).
const (
	chatCompletionsPath = "/v1/chat/completions"
	responsesPath       = "/v1/responses"
)

// validatedBody is what kin-openapi's request validator leaves on a request body with
// Options.KeepValidatedValue: the value it decoded and validated.
type validatedBody interface{ ValidatedValue() any }

// keepValidated chooses the request validator: for POST /v1/chat/completions and
// /v1/responses (the hot paths of turns) the one that keeps the value it validated, so that
// chatFromValidated and responseFromValidated bind it without decoding the body a second
// time; for every other operation the plain one,
// whose generated wrappers decode the body themselves, as before. Both validate the same
// document with the same options otherwise, so the 400s are the same.
func keepValidated(plain, keep echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		p, k := plain(next), keep(next)
		return func(c echo.Context) error {
			if c.Request().Method == http.MethodPost && (c.Path() == chatCompletionsPath || c.Path() == responsesPath) {
				return k(c)
			}
			return p(c)
		}
	}
}

// chatFromValidated serves POST /v1/chat/completions from the value the request validator
// decoded and validated: the generated wrapper would decode the same body again (its
// UnmarshalJSON goes through a map of raw members, then each member, then each message).
// The body is built with the generated types, members matched exactly as the generated
// UnmarshalJSON matches them, unknown members in AdditionalProperties; anything it does not
// recognise falls back to the generated wrapper.
func (h *v1Handlers) chatFromValidated(generated echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		vb, ok := c.Request().Body.(validatedBody)
		if !ok {
			return generated(c)
		}
		body, ok := chatRequestOf(vb.ValidatedValue())
		if !ok {
			return generated(c)
		}
		res, err := h.CreateChatCompletion(c.Request().Context(), v1api.CreateChatCompletionRequestObject{Body: body})
		if err != nil {
			return err
		}
		if res == nil {
			return nil
		}
		return res.VisitCreateChatCompletionResponse(c.Response())
	}
}

// chatRequestOf builds the request body from a decoded JSON value (map[string]any, []any,
// string, float64, bool, nil), as CreateChatCompletionRequest.UnmarshalJSON would from the
// same JSON; false when the value has a shape the schema does not allow.
func chatRequestOf(v any) (*v1api.CreateChatCompletionRequest, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	var body v1api.CreateChatCompletionRequest
	for name, member := range obj {
		switch name {
		case "messages":
			items, ok := member.([]any)
			if !ok {
				return nil, false
			}
			body.Messages = make([]v1api.ChatMessage, len(items))
			for i, item := range items {
				if body.Messages[i], ok = chatMessageOf(item); !ok {
					return nil, false
				}
			}
		case "model":
			if body.Model, ok = optString[v1api.ModelId](member); !ok {
				return nil, false
			}
		case "stream":
			if body.Stream, ok = optBool(member); !ok {
				return nil, false
			}
		case "stream_options":
			if member != nil {
				opts, ok := streamOptionsOf(member)
				if !ok {
					return nil, false
				}
				body.StreamOptions = opts
			}
		case "conversation":
			if body.Conversation, ok = optString[string](member); !ok {
				return nil, false
			}
		default:
			if body.AdditionalProperties == nil {
				body.AdditionalProperties = map[string]any{}
			}
			body.AdditionalProperties[name] = plainJSON(member)
		}
	}
	return &body, true
}

func chatMessageOf(v any) (v1api.ChatMessage, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return v1api.ChatMessage{}, false
	}
	var m v1api.ChatMessage
	for name, member := range obj {
		switch name {
		case "role":
			s, ok := member.(string)
			if !ok {
				return v1api.ChatMessage{}, false
			}
			m.Role = v1api.ChatMessageRole(s)
		case "content":
			if member == nil {
				continue // null: no content, as json.Unmarshal leaves the pointer
			}
			raw, err := json.Marshal(member)
			if err != nil {
				return v1api.ChatMessage{}, false
			}
			var content v1api.MessageContent
			if content.UnmarshalJSON(raw) != nil {
				return v1api.ChatMessage{}, false
			}
			m.Content = &content
		default:
			if m.AdditionalProperties == nil {
				m.AdditionalProperties = map[string]any{}
			}
			m.AdditionalProperties[name] = plainJSON(member)
		}
	}
	return m, true
}

// optString and optBool read an optional member: nil for null, as json.Unmarshal leaves a
// pointer; false when the member is of another type.
func optString[T ~string](member any) (*T, bool) {
	if member == nil {
		return nil, true
	}
	x, ok := member.(string)
	if !ok {
		return nil, false
	}
	v := T(x)
	return &v, true
}

func optBool(member any) (*bool, bool) {
	if member == nil {
		return nil, true
	}
	x, ok := member.(bool)
	return &x, ok
}

func streamOptionsOf(v any) (*v1api.StreamOptions, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	var o v1api.StreamOptions
	for name, member := range obj {
		if name == "include_usage" {
			if o.IncludeUsage, ok = optBool(member); !ok {
				return nil, false
			}
			continue
		}
		if o.AdditionalProperties == nil {
			o.AdditionalProperties = map[string]any{}
		}
		o.AdditionalProperties[name] = plainJSON(member)
	}
	return &o, true
}

// plainJSON is a decoded value as json.Unmarshal into an interface{} gives it: numbers as
// float64 (kin-openapi decodes them so already; a json.Number is converted).
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case map[string]any:
		for k, m := range x {
			x[k] = plainJSON(m)
		}
	case []any:
		for i, m := range x {
			x[i] = plainJSON(m)
		}
	}
	return v
}
