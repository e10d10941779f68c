package server

import (
	"context"

	"switchboard/accounts"
	"switchboard/gen/apiapi"
	"switchboard/store"
)

// Keys (accounts/keys.go decides, for the dashboard too): an admin manages member and viewer
// keys; owner and admin keys need the owner role (access.KeysPrivileged). Listing and
// revoking take a bearer key or a dashboard session; creating takes a session only (or the
// development user), as the platform spec says.

func (h *apiHandlers) ListKeys(ctx context.Context, _ apiapi.ListKeysRequestObject) (apiapi.ListKeysResponseObject, error) {
	p, _ := principalFrom(ctx)
	keys, err := accounts.ListKeys(ctx, h.s.store, p)
	if err != nil {
		return nil, err
	}
	out := apiapi.KeyList{Keys: make([]apiapi.Key, 0, len(keys))}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyBody(k))
	}
	return apiapi.ListKeys200JSONResponse(out), nil
}

func (h *apiHandlers) CreateKey(ctx context.Context, req apiapi.CreateKeyRequestObject) (apiapi.CreateKeyResponseObject, error) {
	p, _ := principalFrom(ctx)
	name := ""
	if req.Body.Name != nil {
		name = *req.Body.Name
	}
	k, secret, err := accounts.CreateKey(ctx, h.s.store, p, name, string(req.Body.Role))
	if err != nil {
		return nil, err
	}
	b := keyBody(k)
	return apiapi.CreateKey201JSONResponse{Id: b.Id, Role: b.Role, Prefix: b.Prefix, Name: b.Name, CreatedAt: b.CreatedAt,
		LastUsedAt: b.LastUsedAt, RevokedAt: b.RevokedAt, Key: secret}, nil
}

func (h *apiHandlers) RevokeKey(ctx context.Context, req apiapi.RevokeKeyRequestObject) (apiapi.RevokeKeyResponseObject, error) {
	p, _ := principalFrom(ctx)
	k, err := accounts.RevokeKey(ctx, h.s.store, p, req.Id)
	if err != nil {
		return nil, err
	}
	return apiapi.RevokeKey200JSONResponse(keyBody(k)), nil
}

func keyBody(k store.APIKey) apiapi.Key {
	return apiapi.Key{Id: k.ID, Role: apiapi.Role(k.Role), Prefix: k.DisplayPrefix, Name: k.Name, CreatedAt: k.CreatedAt,
		LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}
