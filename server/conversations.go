package server

import (
	"context"

	"switchboard/gen/apiapi"
	"switchboard/inbox"
)

// The team inbox's routes (package inbox). A session acts as its person, a key as the
// workspace.

func (h *apiHandlers) actor(ctx context.Context) (inbox.Actor, error) {
	p, _ := principalFrom(ctx)
	return h.s.inbox.ActorOf(ctx, p.WorkspaceID, p.UserID, p.WorkspaceName)
}

func (h *apiHandlers) ListConversations(ctx context.Context, req apiapi.ListConversationsRequestObject) (apiapi.ListConversationsResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	q := req.Params
	f := inbox.Filter{Channel: deref(q.Channel), Assignee: deref(q.Assignee), After: deref(q.After),
		AgentID: q.AgentId, Limit: 50}
	if q.Status != nil {
		f.Status = string(*q.Status)
	}
	if q.Limit != nil {
		f.Limit = *q.Limit
	}
	page, err := h.s.inbox.List(ctx, workspaceOf(ctx), actor, f)
	if err != nil {
		return nil, err
	}
	return apiapi.ListConversations200JSONResponse(page), nil
}

func (h *apiHandlers) GetConversation(ctx context.Context, req apiapi.GetConversationRequestObject) (apiapi.GetConversationResponseObject, error) {
	d, err := h.s.inbox.Get(ctx, workspaceOf(ctx), req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.GetConversation200JSONResponse(d), nil
}

func (h *apiHandlers) AssignConversation(ctx context.Context, req apiapi.AssignConversationRequestObject) (apiapi.AssignConversationResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	d, err := h.s.inbox.Assign(ctx, workspaceOf(ctx), req.Id, actor, req.Body.UserId)
	if err != nil {
		return nil, err
	}
	return apiapi.AssignConversation200JSONResponse(d), nil
}

func (h *apiHandlers) ReplyToConversation(ctx context.Context, req apiapi.ReplyToConversationRequestObject) (apiapi.ReplyToConversationResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	m, err := h.s.inbox.Reply(ctx, workspaceOf(ctx), req.Id, actor, req.Body.Text)
	if err != nil {
		return nil, err
	}
	return apiapi.ReplyToConversation201JSONResponse(m), nil
}

func (h *apiHandlers) AddConversationNote(ctx context.Context, req apiapi.AddConversationNoteRequestObject) (apiapi.AddConversationNoteResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	n, err := h.s.inbox.AddNote(ctx, workspaceOf(ctx), req.Id, actor, req.Body.Text)
	if err != nil {
		return nil, err
	}
	return apiapi.AddConversationNote201JSONResponse(n), nil
}

func (h *apiHandlers) ReleaseConversation(ctx context.Context, req apiapi.ReleaseConversationRequestObject) (apiapi.ReleaseConversationResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	d, err := h.s.inbox.Release(ctx, workspaceOf(ctx), req.Id, actor)
	if err != nil {
		return nil, err
	}
	return apiapi.ReleaseConversation200JSONResponse(d), nil
}

func (h *apiHandlers) CloseConversation(ctx context.Context, req apiapi.CloseConversationRequestObject) (apiapi.CloseConversationResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	d, err := h.s.inbox.Close(ctx, workspaceOf(ctx), req.Id, actor)
	if err != nil {
		return nil, err
	}
	return apiapi.CloseConversation200JSONResponse(d), nil
}

func (h *apiHandlers) GetInboxSettings(ctx context.Context, _ apiapi.GetInboxSettingsRequestObject) (apiapi.GetInboxSettingsResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	out, err := h.s.inbox.Settings(ctx, workspaceOf(ctx), actor)
	if err != nil {
		return nil, err
	}
	return apiapi.GetInboxSettings200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateInboxSettings(ctx context.Context, req apiapi.UpdateInboxSettingsRequestObject) (apiapi.UpdateInboxSettingsResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	out, err := h.s.inbox.SetNotifyAfter(ctx, workspaceOf(ctx), actor, req.Body.NotifyAfterSeconds)
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateInboxSettings200JSONResponse(out), nil
}

func (h *apiHandlers) UpdateMyInboxPreferences(ctx context.Context, req apiapi.UpdateMyInboxPreferencesRequestObject) (apiapi.UpdateMyInboxPreferencesResponseObject, error) {
	actor, err := h.actor(ctx)
	if err != nil {
		return nil, err
	}
	out, err := h.s.inbox.SetMine(ctx, workspaceOf(ctx), actor, req.Body.Name, req.Body.NotifyUnclaimed)
	if err != nil {
		return nil, err
	}
	return apiapi.UpdateMyInboxPreferences200JSONResponse(out), nil
}
