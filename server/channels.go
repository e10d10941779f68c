package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

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
// provider expects. Any method and sub-path reach the channel's provider, which decides what
// it serves (SMS: POST at the inbound URL and its /status; an app's verification handshake is
// a GET).
func (s *Server) routeHooks(e *echo.Echo) {
	if s.channels == nil {
		return
	}
	e.Any("/hooks/:provider/:token", s.hook, s.bodyLimit())
	e.Any("/hooks/:provider/:token/*", s.hook, s.bodyLimit())
}

func (s *Server) hook(c echo.Context) error {
	req := c.Request()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return err // the body limit's 413, or the client went away
	}
	ans, err := s.channels.Receive(req.Context(), c.Param("provider"), c.Param("token"), channels.Request{
		Method: req.Method, Sub: c.Param("*"), RawQuery: req.URL.RawQuery, Query: req.URL.Query(), Header: req.Header, Body: body})
	if err != nil {
		return err
	}
	status := ans.Status
	if status == 0 {
		status = http.StatusOK
	}
	if ans.ContentType == "" {
		return c.NoContent(status)
	}
	return c.Blob(status, ans.ContentType, []byte(ans.Body))
}
