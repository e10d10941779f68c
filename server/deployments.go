package server

import (
	"context"

	"switchboard/apierr"
	"switchboard/gen/apiapi"
	"switchboard/manage"
)

// The deployment routes: deploy_agent, undeploying one deployment and generate_test_link over
// /api, the same operations of package manage as the MCP tools; the path names the agent (and
// the deployment), the body is the tool's input without agent_id.

func (h *apiHandlers) ListDeployments(ctx context.Context, req apiapi.ListDeploymentsRequestObject) (apiapi.ListDeploymentsResponseObject, error) {
	out, err := h.s.ops.ListDeployments(ctx, workspaceOf(ctx), manage.ListDeploymentsInput{AgentID: req.Id.String()})
	if err != nil {
		return nil, restParam(err)
	}
	return apiapi.ListDeployments200JSONResponse(out), nil
}

func (h *apiHandlers) DeployAgent(ctx context.Context, req apiapi.DeployAgentRequestObject) (apiapi.DeployAgentResponseObject, error) {
	var in manage.DeployAgentInput
	if req.Body != nil {
		in = manage.DeployAgentInput(*req.Body)
	}
	in.AgentID = req.Id.String()
	out, err := h.s.ops.DeployAgent(ctx, workspaceOf(ctx), in)
	if err != nil {
		return nil, restParam(err)
	}
	return apiapi.DeployAgent201JSONResponse(out), nil
}

func (h *apiHandlers) UndeployAgent(ctx context.Context, req apiapi.UndeployAgentRequestObject) (apiapi.UndeployAgentResponseObject, error) {
	out, err := h.s.ops.UndeployAgent(ctx, workspaceOf(ctx), manage.UndeployAgentInput{AgentID: req.Id.String(), DeploymentID: req.DeploymentId.String()})
	if err != nil {
		return nil, deploymentParam(restParam(err))
	}
	return apiapi.UndeployAgent200JSONResponse(out), nil
}

func (h *apiHandlers) GenerateTestLink(ctx context.Context, req apiapi.GenerateTestLinkRequestObject) (apiapi.GenerateTestLinkResponseObject, error) {
	out, err := h.s.ops.GenerateTestLink(ctx, workspaceOf(ctx), manage.TestLinkInput{AgentID: req.Id.String()})
	if err != nil {
		return nil, restParam(err)
	}
	return apiapi.GenerateTestLink200JSONResponse(out), nil
}

// deploymentParam names the path parameter `deploymentId` where the operation names its
// argument deployment_id.
func deploymentParam(err error) error {
	if e := apierr.As(err); e != nil && e.Param == "deployment_id" {
		copied := *e
		copied.Param = "deploymentId"
		return &copied
	}
	return err
}
