// Package smstest is a fake SMS provider at the wire: an httptest server answering the
// provider's REST API (messages, available numbers, incoming numbers) as the official SDK
// expects, recording what it was sent. Point sms.Config.BaseURL (TWILIO_BASE_URL) at URL.
package smstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// AccountSID and AuthToken are the credentials the fake accepts.
const (
	AccountSID = "ACtest0000000000000000000000000000"
	AuthToken  = "testtoken"
)

// Message is an SMS the fake was asked to send.
type Message struct {
	SID, From, To, Body string
}

// Server is the fake provider.
type Server struct {
	URL string

	mu        sync.Mutex
	messages  []Message
	bought    []string
	released  []string
	failTo    map[string]bool
	available map[string][]string // country -> numbers
}

// New starts the fake; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{failTo: map[string]bool{}, available: map[string][]string{
		"US": {"+14155550100", "+14155550101", "+12125550102"},
		"CA": {"+16045550103"},
	}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

// FailTo makes sends to number fail with the provider's 400.
func (s *Server) FailTo(number string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failTo[number] = true
}

// Messages are the SMS sent so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Bought are the numbers purchased so far.
func (s *Server) Bought() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bought...)
}

// Released are the provider ids of the numbers released so far.
func (s *Server) Released() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.released...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || user != AccountSID || pass != AuthToken {
		writeError(w, http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	prefix := "/2010-04-01/Accounts/" + AccountSID + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		writeError(w, http.StatusNotFound, 20404, "The requested resource was not found")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, prefix)
	_ = r.ParseForm()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && path == "Messages.json":
		to := r.PostForm.Get("To")
		if s.failTo[to] {
			writeError(w, http.StatusBadRequest, 21211, "The 'To' number "+to+" is not a valid phone number.")
			return
		}
		m := Message{SID: fmt.Sprintf("SM%032d", len(s.messages)+1), From: r.PostForm.Get("From"), To: to, Body: r.PostForm.Get("Body")}
		s.messages = append(s.messages, m)
		writeJSON(w, http.StatusCreated, map[string]any{"sid": m.SID, "from": m.From, "to": m.To, "body": m.Body, "status": "queued"})
	case r.Method == http.MethodGet && strings.HasPrefix(path, "AvailablePhoneNumbers/") && strings.HasSuffix(path, "/Local.json"):
		country := strings.TrimSuffix(strings.TrimPrefix(path, "AvailablePhoneNumbers/"), "/Local.json")
		area, contains := r.URL.Query().Get("AreaCode"), r.URL.Query().Get("Contains")
		list := []map[string]any{}
		for _, n := range s.available[country] {
			if area != "" && !strings.HasPrefix(n[2:], area) || contains != "" && !strings.Contains(n, contains) {
				continue
			}
			list = append(list, map[string]any{"phone_number": n, "friendly_name": n, "iso_country": country, "locality": "Springfield", "region": "XX",
				"capabilities": map[string]bool{"sms": true, "voice": true, "mms": false}})
		}
		writeJSON(w, http.StatusOK, map[string]any{"available_phone_numbers": list, "uri": r.URL.Path})
	case r.Method == http.MethodPost && path == "IncomingPhoneNumbers.json":
		n := r.PostForm.Get("PhoneNumber")
		s.bought = append(s.bought, n)
		writeJSON(w, http.StatusCreated, map[string]any{"sid": fmt.Sprintf("PN%032d", len(s.bought)), "phone_number": n})
	case r.Method == http.MethodDelete && strings.HasPrefix(path, "IncomingPhoneNumbers/"):
		s.released = append(s.released, strings.TrimSuffix(strings.TrimPrefix(path, "IncomingPhoneNumbers/"), ".json"))
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusNotFound, 20404, "The requested resource was not found")
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "status": status, "more_info": "https://www.twilio.com/docs/errors/" + fmt.Sprint(code)})
}
