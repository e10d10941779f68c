// Package msgappstest fakes the messaging apps at the wire: Meta's Graph API (WhatsApp,
// Messenger and Instagram sends) and the Telegram Bot API (getMe, setWebhook, sendMessage)
// on one httptest server, recording every request's exact JSON; and builds the webhook
// bodies the apps post, signed as they sign them.
package msgappstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is a call the fake received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// JSON is the request's body decoded.
func (r Request) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("the request to %s is not JSON: %v: %s", r.Path, err, r.Body)
	}
	return m
}

// Server is the fake apps. BotUsername is what getMe answers for any token not refused.
type Server struct {
	URL string
	mu  sync.Mutex
	// requests are the calls received, in order.
	requests []Request
	refused  map[string]bool // bot tokens getMe refuses
	next     int
}

// New starts the fake, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{refused: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// RefuseToken makes getMe answer 401 for a bot token.
func (s *Server) RefuseToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[token] = true
}

// Requests are the calls whose path ends with suffix ("" for all), in order.
func (s *Server) Requests(suffix string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.next++
	n := s.next
	s.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/bot") {
		s.telegram(w, r, body, n)
		return
	}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": "Unknown path components: " + r.URL.Path, "type": "OAuthException", "code": 2500}})
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"message": "An access token is required to request this resource.", "type": "OAuthException", "code": 104}})
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	if m["messaging_product"] == "whatsapp" {
		writeJSON(w, http.StatusOK, map[string]any{"messaging_product": "whatsapp",
			"contacts": []any{map[string]any{"input": m["to"], "wa_id": m["to"]}},
			"messages": []any{map[string]any{"id": fmt.Sprintf("wamid.OUT%06d", n)}}})
		return
	}
	recipient, _ := m["recipient"].(map[string]any)
	writeJSON(w, http.StatusOK, map[string]any{"recipient_id": recipient["id"], "message_id": fmt.Sprintf("m_OUT%06d", n)})
}

func (s *Server) telegram(w http.ResponseWriter, r *http.Request, body []byte, n int) {
	rest := strings.TrimPrefix(r.URL.Path, "/bot")
	i := strings.LastIndex(rest, "/")
	if i < 0 {
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
		return
	}
	token, method := rest[:i], rest[i+1:]
	s.mu.Lock()
	refused := s.refused[token]
	s.mu.Unlock()
	if refused {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	switch method {
	case "getMe":
		id, _, _ := strings.Cut(token, ":")
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{"id": json.Number(id), "is_bot": true, "first_name": "Test", "username": "test_bot"}})
	case "setWebhook":
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": true, "description": "Webhook was set"})
	case "sendMessage":
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{"message_id": 1000 + n,
			"chat": map[string]any{"id": m["chat_id"], "type": "private"}, "text": m["text"]}})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"ok": false, "error_code": 404, "description": "Not Found: method not found"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
