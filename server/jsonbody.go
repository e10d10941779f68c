package server

import (
	"encoding/json"
	"net/http"
)

// jsonBody is a JSON response written by hand. Only the /api handlers (apiJSON) still use
// it, until they return their generated response objects; the /v1 handlers no longer do.
// Delete it with apiJSON.
type jsonBody struct {
	status int
	body   any
}

func (j jsonBody) write(w http.ResponseWriter) error {
	raw, err := json.Marshal(j.body)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(j.status)
	_, err = w.Write(raw)
	return err
}
