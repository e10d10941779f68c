package server

import (
	"context"

	"switchboard/access"
	"switchboard/apikey"
	"switchboard/gen/apiapi"
	"switchboard/store"
)

// Keys: an admin manages member and viewer keys; owner and admin keys need the owner role
// (access.KeysPrivileged), so an admin can neither mint a key above its own rank nor revoke
// one of its peers.

func (h *apiHandlers) ListKeys(ctx context.Context, _ apiapi.ListKeysRequestObject) (apiapi.ListKeysResponseObject, error) {
	keys, err := h.s.store.ListKeys(ctx, workspaceOf(ctx))
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
	if err := mayManageKeyOf(p, string(req.Body.Role)); err != nil {
		return nil, err
	}
	secret, sum, display := apikey.New()
	k, err := h.s.store.CreateKey(ctx, p.WorkspaceID, string(req.Body.Role), sum, display)
	if err != nil {
		return nil, err
	}
	b := keyBody(k)
	return apiapi.CreateKey201JSONResponse{Id: b.Id, Role: b.Role, Prefix: b.Prefix, CreatedAt: b.CreatedAt,
		RevokedAt: b.RevokedAt, Key: secret}, nil
}

func (h *apiHandlers) RevokeKey(ctx context.Context, req apiapi.RevokeKeyRequestObject) (apiapi.RevokeKeyResponseObject, error) {
	p, _ := principalFrom(ctx)
	k, err := h.s.store.KeyByID(ctx, p.WorkspaceID, req.Id)
	if err != nil {
		return nil, err
	}
	if err := mayManageKeyOf(p, k.Role); err != nil {
		return nil, err
	}
	if k.RevokedAt == nil {
		if k, err = h.s.store.RevokeKey(ctx, k.ID); err != nil {
			return nil, err
		}
	}
	return apiapi.RevokeKey200JSONResponse(keyBody(k)), nil
}

// mayManageKeyOf checks that the caller may create or revoke a key of the role.
func mayManageKeyOf(p store.Principal, role string) error {
	r, _ := access.ParseRole(role)
	if r < access.Admin {
		return nil // access.Keys, which the route itself needs
	}
	return access.Check(p.Access(), access.KeysPrivileged, "Creating or revoking an "+role+" key")
}

func keyBody(k store.APIKey) apiapi.Key {
	return apiapi.Key{Id: k.ID, Role: apiapi.Role(k.Role), Prefix: k.DisplayPrefix, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}
