package server

import (
	"context"

	"switchboard/apierr"
	"switchboard/catalog"
	"switchboard/gen/v1api"
)

// v1Handlers implements the generated strict /v1 interface.
type v1Handlers struct {
	s *Server
}

var _ v1api.StrictServerInterface = (*v1Handlers)(nil)

func modelObject(m catalog.Model) v1api.Model {
	return v1api.Model{Id: m.ID, Object: v1api.ModelObjectModel, Created: m.Created, OwnedBy: string(m.Family)}
}

func (h *v1Handlers) ListModels(ctx context.Context, _ v1api.ListModelsRequestObject) (v1api.ListModelsResponseObject, error) {
	all := h.s.catalog.All()
	list := v1api.ModelList{Object: v1api.ModelListObjectList, Data: make([]v1api.Model, 0, len(all))}
	for _, m := range all {
		list.Data = append(list.Data, modelObject(m))
	}
	return v1api.ListModels200JSONResponse{Body: list}, nil
}

func (h *v1Handlers) RetrieveModel(ctx context.Context, req v1api.RetrieveModelRequestObject) (v1api.RetrieveModelResponseObject, error) {
	m, ok := h.s.catalog.Lookup(req.Id)
	if !ok {
		return nil, apierr.NotFound("id", "model_not_found", "The model %q does not exist or is not offered here. GET /v1/models lists the models you can use.", req.Id)
	}
	return v1api.RetrieveModel200JSONResponse{Body: modelObject(m)}, nil
}
