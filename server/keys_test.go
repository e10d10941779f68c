package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

type keyBody struct {
	ID        string  `json:"id"`
	Role      string  `json:"role"`
	Prefix    string  `json:"prefix"`
	RevokedAt *string `json:"revoked_at"`
	Key       string  `json:"key"`
}

// TestKeysAreManagedWithinTheRoleLadder: an admin makes and revokes member and viewer keys
// (the secret shown once, never listed); admin and owner keys need an owner; a revoked key
// stops working; a key of another workspace is not found. Keys are made through a session
// (sessions_test.go), and listed and revoked with bearer keys.
func TestKeysAreManagedWithinTheRoleLadder(t *testing.T) {
	t.Parallel()
	b := setup(t) // b.key is an admin's
	adminSession, ownerSession := b.signedIn(t, "admin"), b.signedIn(t, "owner")

	resp, raw := adminSession.do(t, http.MethodPost, "/api/keys", `{"role":"viewer"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var viewer keyBody
	require.NoError(t, json.Unmarshal(raw, &viewer))
	require.Equal(t, "viewer", viewer.Role)
	require.Regexp(t, `^sk-svc_`, viewer.Key)
	resp, _ = b.do(t, http.MethodGet, "/api/agents", "Bearer "+viewer.Key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the new key works")

	resp, raw = b.do(t, http.MethodGet, "/api/keys", "Bearer "+b.key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, string(raw), viewer.Key, "a list never shows a secret")
	require.Contains(t, string(raw), viewer.ID)

	resp, raw = adminSession.do(t, http.MethodPost, "/api/keys", `{"role":"admin"}`)
	e := errorOf(t, resp, raw, http.StatusForbidden)
	require.Equal(t, "role_not_allowed", str(e.Code))
	require.Contains(t, e.Message, "owner role")
	resp, raw = ownerSession.do(t, http.MethodPost, "/api/keys", `{"role":"admin"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(raw))
	var admin keyBody
	require.NoError(t, json.Unmarshal(raw, &admin))
	resp, raw = b.do(t, http.MethodDelete, "/api/keys/"+admin.ID, "Bearer "+b.key, "")
	require.Equal(t, "role_not_allowed", str(errorOf(t, resp, raw, http.StatusForbidden).Code), "an admin cannot revoke a peer")

	resp, raw = b.do(t, http.MethodDelete, "/api/keys/"+viewer.ID, "Bearer "+b.key, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var revoked keyBody
	require.NoError(t, json.Unmarshal(raw, &revoked))
	require.NotNil(t, revoked.RevokedAt)
	resp, _ = b.do(t, http.MethodGet, "/api/agents", "Bearer "+viewer.Key, "")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a revoked key stops working")

	other, err := b.store.CreateWorkspace(t.Context(), "other", 1)
	require.NoError(t, err)
	theirs := b.newKey(t, other, "owner")
	resp, raw = b.do(t, http.MethodDelete, "/api/keys/"+admin.ID, "Bearer "+theirs, "")
	require.Equal(t, "key_not_found", str(errorOf(t, resp, raw, http.StatusNotFound).Code))

	resp, raw = ownerSession.do(t, http.MethodPost, "/api/keys", `{"role":"root"}`)
	require.Equal(t, "role", str(errorOf(t, resp, raw, http.StatusBadRequest).Param))
}
