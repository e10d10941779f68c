package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"switchboard/access"
	"switchboard/campaigns"
	"switchboard/gen/apiapi"
)

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
