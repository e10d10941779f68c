package server

import (
	"context"

	"switchboard/gen/apiapi"
	"switchboard/workflows"
)

func (h *apiHandlers) ListWorkflows(ctx context.Context, _ apiapi.ListWorkflowsRequestObject) (apiapi.ListWorkflowsResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.List(ctx, workspaceOf(ctx))
	if err != nil {
		return nil, err
	}
	return apiapi.ListWorkflows200JSONResponse(out), nil
}

func (h *apiHandlers) CreateWorkflow(ctx context.Context, req apiapi.CreateWorkflowRequestObject) (apiapi.CreateWorkflowResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Create(ctx, workspaceOf(ctx), workflows.Input{Document: &req.Body.Document, Enabled: req.Body.Enabled})
	if err != nil {
		return nil, err
	}
	return apiapi.CreateWorkflow201JSONResponse(out), nil
}

func (h *apiHandlers) GetWorkflow(ctx context.Context, req apiapi.GetWorkflowRequestObject) (apiapi.GetWorkflowResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetWorkflow200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateWorkflow(ctx context.Context, req apiapi.UpdateWorkflowRequestObject) (apiapi.UpdateWorkflowResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Update(ctx, workspaceOf(ctx), req.Id, workflows.Input{Document: req.Body.Document, Enabled: req.Body.Enabled})
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateWorkflow200JSONResponse(out), nil
}

func (h *apiHandlers) DeleteWorkflow(ctx context.Context, req apiapi.DeleteWorkflowRequestObject) (apiapi.DeleteWorkflowResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Delete(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.DeleteWorkflow200JSONResponse(out), nil
}

func (h *apiHandlers) ListWorkflowRuns(ctx context.Context, req apiapi.ListWorkflowRunsRequestObject) (apiapi.ListWorkflowRunsResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Runs(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.ListWorkflowRuns200JSONResponse(out), nil
}

func (h *apiHandlers) StartWorkflowRun(ctx context.Context, req apiapi.StartWorkflowRunRequestObject) (apiapi.StartWorkflowRunResponseObject, error) {
	wf := h.s.workflows
	var input map[string]any
	if req.Body != nil && req.Body.Input != nil {
		input = *req.Body.Input
	}
	out, err := wf.StartManual(ctx, workspaceOf(ctx), req.Id, input)
	if err != nil {
		return nil, err
	}
	return apiapi.StartWorkflowRun201JSONResponse(out), nil
}

func (h *apiHandlers) GetWorkflowRun(ctx context.Context, req apiapi.GetWorkflowRunRequestObject) (apiapi.GetWorkflowRunResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Run(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetWorkflowRun200JSONResponse(out), nil
}

func (h *apiHandlers) CancelWorkflowRun(ctx context.Context, req apiapi.CancelWorkflowRunRequestObject) (apiapi.CancelWorkflowRunResponseObject, error) {
	wf := h.s.workflows
	out, err := wf.Cancel(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.CancelWorkflowRun200JSONResponse(out), nil
}
