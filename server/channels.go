package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/channels"
	"switchboard/gen/apiapi"
)

// channelInput reads the config of a channel request from the raw body, so that a PATCH can
// tell a key set to null (remove it) from one left out.
func channelInput(ctx context.Context, provider blueprint.ChannelType, name *string) (channels.Input, error) {
	in := channels.Input{Provider: provider, Name: name}
	raw, _ := ctx.Value(rawBodyKey{}).([]byte)
	var body struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			return in, apierr.Invalid("config", "invalid_value", "config must be a JSON object.")
		}
	}
	in.Config = body.Config
	return in, nil
}

func (h *apiHandlers) ListChannels(ctx context.Context, req apiapi.ListChannelsRequestObject) (apiapi.ListChannelsResponseObject, error) {
	provider := ""
	if req.Params.Provider != nil {
		provider = string(*req.Params.Provider)
	}
	list, err := h.s.channels.List(ctx, workspaceOf(ctx), provider)
	if err != nil {
		return nil, err
	}
	return apiapi.ListChannels200JSONResponse{Object: apiapi.List, Data: list}, nil
}

func (h *apiHandlers) CreateChannel(ctx context.Context, req apiapi.CreateChannelRequestObject) (apiapi.CreateChannelResponseObject, error) {
	in, err := channelInput(ctx, req.Body.Provider, &req.Body.Name)
	if err != nil {
		return nil, err
	}
	out, err := h.s.channels.Create(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, err
	}
	return apiapi.CreateChannel201JSONResponse(out), nil
}

func (h *apiHandlers) GetChannel(ctx context.Context, req apiapi.GetChannelRequestObject) (apiapi.GetChannelResponseObject, error) {
	out, err := h.s.channels.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetChannel200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateChannel(ctx context.Context, req apiapi.UpdateChannelRequestObject) (apiapi.UpdateChannelResponseObject, error) {
	in, err := channelInput(ctx, "", req.Body.Name)
	if err != nil {
		return nil, err
	}
	out, err := h.s.channels.Update(ctx, workspaceOf(ctx), req.Id, in)
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateChannel200JSONResponse(out), nil
}

func (h *apiHandlers) DeleteChannel(ctx context.Context, req apiapi.DeleteChannelRequestObject) (apiapi.DeleteChannelResponseObject, error) {
	out, err := h.s.channels.Delete(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.DeleteChannel200JSONResponse{Id: out.ID, Object: apiapi.ChannelDeleted, Deleted: out.Deleted}, nil
}

// routeHooks mounts the providers' inbound webhooks: no key (the token in the path finds
// the channel, the provider's signature proves the sender), a body limit, and the answer the
// provider expects.
func (s *Server) routeHooks(e *echo.Echo) {
	if s.channels == nil {
		return
	}
	e.POST("/hooks/:provider/:token", s.hook(false), s.bodyLimit())
	e.POST("/hooks/:provider/:token/status", s.hook(true), s.bodyLimit())
}

func (s *Server) hook(status bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !strings.HasPrefix(req.Header.Get(echo.HeaderContentType), echo.MIMEApplicationForm) {
			return apierr.Invalid("", "invalid_webhook", "The webhook body must be application/x-www-form-urlencoded, as the carrier sends it.")
		}
		if err := req.ParseForm(); err != nil {
			return apierr.Invalid("", "invalid_webhook", "The webhook body could not be read as a form.")
		}
		ans, err := s.channels.Receive(req.Context(), channels.Hook{Provider: c.Param("provider"), Token: c.Param("token"), Status: status,
			Form: req.PostForm, Signature: req.Header.Get("X-Twilio-Signature")})
		if err != nil {
			return err
		}
		return c.Blob(http.StatusOK, ans.ContentType, []byte(ans.Body))
	}
}
