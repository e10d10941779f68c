// Package smstest is a fake SMS provider at the wire: an httptest server answering the
// provider's REST API (messages, available numbers, the account's incoming numbers) as the
// official SDK expects, recording what it was sent. Point sms.Config.BaseURL
// (TWILIO_BASE_URL) at URL. It also plays the provider's side of webhooks (sign.go): the
// inbound SMS and status callback forms, signed as the provider signs them.
package smstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// AccountSID and AuthToken are the credentials the fake accepts.
const (
	AccountSID = "ACtest0000000000000000000000000000"
	AuthToken  = "testtoken"
)

// Message is an SMS the fake was asked to send.
type Message struct {
	SID, From, To, Body string
	StatusCallback      string
}

// number is a phone number the account holds.
type number struct {
	sid, phoneNumber          string
	smsURL, smsMethod         string
	voiceURL, voiceMethod     string
	statusCallback, statusCBM string
	created, updated          time.Time
}

// Server is the fake provider.
type Server struct {
	URL string

	mu         sync.Mutex
	messages   []Message
	createdAt  []time.Time // when each of messages was created
	bought     []string
	released   []string
	failTo     map[string]bool
	available  map[string][]string // country -> numbers
	numbers    []*number           // the account's numbers, in the order it got them
	numbersSeq int                 // numbers ever added, for their SIDs
	delay      time.Duration       // Messages.json waits this long before answering
	hold       chan struct{}       // while not nil, Messages.json waits until it is closed (Hold)
	held       int                 // sends waiting on hold
	calls      []PlacedCall
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

// SetDelay makes every send wait d before the fake answers, as a slow provider does. A
// send whose client gives up while waiting is not recorded.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Hold makes the sends that arrive from now on wait until release is called, as a provider
// that has not answered yet: a test acts while a send is at the provider, its decision
// committed and its answer not yet recorded (WaitHeld tells when one has arrived). A send
// whose client gives up while waiting is not recorded. Calling release again does nothing.
func (s *Server) Hold() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hold := make(chan struct{})
	s.hold = hold
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.hold == hold {
				s.hold = nil
			}
			close(hold)
		})
	}
}

// WaitHeld waits until at least n sends wait on Hold; it fails the test after timeout. Call
// it from the test's goroutine.
func (s *Server) WaitHeld(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		held := s.held
		s.mu.Unlock()
		if held >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("smstest: %d sends held after %s, want at least %d", held, timeout, n)
		}
	}
}

// Messages are the SMS sent so far, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// WaitMessages waits until at least n SMS were sent and returns them all; it fails the test
// after timeout. Call it from the test's goroutine (it may call t.Fatalf).
func (s *Server) WaitMessages(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := s.Messages()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("smstest: %d SMS sent after %s, want at least %d: %+v", len(got), timeout, n, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
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

// AddNumber puts e164 on the account, as if bought earlier, and returns its SID. A number
// the account already holds keeps its SID.
func (s *Server) AddNumber(e164 string) (sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.numberByPhone(e164); n != nil {
		return n.sid
	}
	return s.addNumber(e164).sid
}

// NumberSMSURL is where the messaging webhook of the account's number e164 points; empty
// when unset or when the account does not hold e164.
func (s *Server) NumberSMSURL(e164 string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.numberByPhone(e164); n != nil {
		return n.smsURL
	}
	return ""
}

// addNumber needs s.mu held.
func (s *Server) addNumber(e164 string) *number {
	s.numbersSeq++
	now := time.Now().UTC().Truncate(time.Second)
	n := &number{sid: fmt.Sprintf("PN%032d", s.numbersSeq), phoneNumber: e164, smsMethod: http.MethodPost, voiceMethod: http.MethodPost,
		statusCBM: http.MethodPost, created: now, updated: now}
	s.numbers = append(s.numbers, n)
	return n
}

// numberByPhone and numberBySID need s.mu held.
func (s *Server) numberByPhone(e164 string) *number {
	for _, n := range s.numbers {
		if n.phoneNumber == e164 {
			return n
		}
	}
	return nil
}

func (s *Server) numberBySID(sid string) *number {
	for _, n := range s.numbers {
		if n.sid == sid {
			return n
		}
	}
	return nil
}

// accountPath is the prefix of every account resource.
const accountPath = "/2010-04-01/Accounts/" + AccountSID + "/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || user != AccountSID || pass != AuthToken {
		writeError(w, http.StatusUnauthorized, 20003, "Authenticate")
		return
	}
	if !strings.HasPrefix(r.URL.Path, accountPath) {
		writeError(w, http.StatusNotFound, 20404, "The requested resource was not found")
		return
	}
	path := strings.TrimPrefix(r.URL.Path, accountPath)
	_ = r.ParseForm()
	switch {
	case r.Method == http.MethodPost && path == "Messages.json":
		s.createMessage(w, r)
	case r.Method == http.MethodPost && path == "Calls.json":
		s.createCall(w, r)
	case r.Method == http.MethodGet && path == "Messages.json":
		s.listMessages(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "AvailablePhoneNumbers/") && strings.HasSuffix(path, "/Local.json"):
		s.listAvailable(w, r, strings.TrimSuffix(strings.TrimPrefix(path, "AvailablePhoneNumbers/"), "/Local.json"))
	case path == "IncomingPhoneNumbers.json":
		switch r.Method {
		case http.MethodPost:
			s.buyNumber(w, r)
		case http.MethodGet:
			s.listNumbers(w, r)
		default:
			writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
		}
	case strings.HasPrefix(path, "IncomingPhoneNumbers/") && strings.HasSuffix(path, ".json"):
		sid := strings.TrimSuffix(strings.TrimPrefix(path, "IncomingPhoneNumbers/"), ".json")
		switch r.Method {
		case http.MethodGet, http.MethodPost:
			s.number(w, r, sid)
		case http.MethodDelete:
			s.releaseNumber(w, sid)
		default:
			writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
		}
	default:
		writeError(w, http.StatusNotFound, 20404, "The requested resource was not found")
	}
}

func (s *Server) createMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	delay, hold := s.delay, s.hold
	if hold != nil {
		s.held++
	}
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
		s.mu.Lock()
		s.held--
		s.mu.Unlock()
		if r.Context().Err() != nil {
			return
		}
	}
	if delay > 0 {
		// Waiting without the lock: the test reads the fake, and other sends go on, meanwhile.
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	to := r.PostForm.Get("To")
	if s.failTo[to] {
		writeError(w, http.StatusBadRequest, 21211, "The 'To' number "+to+" is not a valid phone number.")
		return
	}
	m := Message{SID: fmt.Sprintf("SM%032d", len(s.messages)+1), From: r.PostForm.Get("From"), To: to, Body: r.PostForm.Get("Body"),
		StatusCallback: r.PostForm.Get("StatusCallback")}
	s.messages = append(s.messages, m)
	s.createdAt = append(s.createdAt, time.Now())
	writeJSON(w, http.StatusCreated, messageJSON(m, s.createdAt[len(s.createdAt)-1]))
}

// messageJSON is a message resource as the provider writes it.
func messageJSON(m Message, created time.Time) map[string]any {
	at := created.UTC().Format(time.RFC1123Z)
	return map[string]any{"sid": m.SID, "account_sid": AccountSID, "from": m.From, "to": m.To, "body": m.Body,
		"status": "queued", "direction": "outbound-api", "num_segments": "1", "num_media": "0", "api_version": "2010-04-01",
		"date_created": at, "date_updated": at, "date_sent": nil, "error_code": nil, "error_message": nil,
		"uri": accountPath + "Messages/" + m.SID + ".json"}
}

// listMessages lists the account's messages, newest first, filtered by To and From as the
// provider does; one page of PageSize (no further pages: the callers read the newest).
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	pageSize := min(max(intParam(q.Get("PageSize"), 50), 1), 1000)
	list := []map[string]any{}
	for i := len(s.messages) - 1; i >= 0 && len(list) < pageSize; i-- {
		m := s.messages[i]
		if (q.Get("To") == "" || q.Get("To") == m.To) && (q.Get("From") == "" || q.Get("From") == m.From) {
			list = append(list, messageJSON(m, s.createdAt[i]))
		}
	}
	uri := accountPath + "Messages.json?" + q.Encode()
	writeJSON(w, http.StatusOK, map[string]any{"messages": list, "first_page_uri": uri, "next_page_uri": nil,
		"previous_page_uri": nil, "uri": uri, "page": 0, "page_size": pageSize, "start": 0, "end": max(len(list)-1, 0)})
}

func (s *Server) listAvailable(w http.ResponseWriter, r *http.Request, country string) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
}

func (s *Server) buyNumber(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e164 := r.PostForm.Get("PhoneNumber")
	s.bought = append(s.bought, e164)
	n := s.addNumber(e164)
	n.update(r)
	writeJSON(w, http.StatusCreated, n.json())
}

// listNumbers answers the account's numbers a page at a time, as the provider does: the
// PhoneNumber filter matches part of a number ('*' standing for any one character), and
// next_page_uri (null on the last page) is how the SDK finds the next page.
func (s *Server) listNumbers(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := r.URL.Query()
	filter := q.Get("PhoneNumber")
	pageSize, page := intParam(q.Get("PageSize"), 50), intParam(q.Get("Page"), 0)
	pageSize = min(max(pageSize, 1), 1000)
	var matched []*number
	for _, n := range s.numbers {
		if matchPattern(n.phoneNumber, filter) {
			matched = append(matched, n)
		}
	}
	start := min(page*pageSize, len(matched))
	end := min(start+pageSize, len(matched))
	list := make([]map[string]any, 0, end-start)
	for _, n := range matched[start:end] {
		list = append(list, n.json())
	}
	pageURI := func(p int) string {
		v := url.Values{"PageSize": {fmt.Sprint(pageSize)}, "Page": {fmt.Sprint(p)}}
		if filter != "" {
			v.Set("PhoneNumber", filter)
		}
		if p > 0 {
			// The provider's page tokens are opaque; this one is only ever echoed back.
			v.Set("PageToken", fmt.Sprintf("PT%d", p*pageSize))
		}
		return accountPath + "IncomingPhoneNumbers.json?" + v.Encode()
	}
	var next, previous any
	if end < len(matched) {
		next = pageURI(page + 1)
	}
	if page > 0 {
		previous = pageURI(page - 1)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"incoming_phone_numbers": list,
		"first_page_uri":         pageURI(0),
		"next_page_uri":          next,
		"previous_page_uri":      previous,
		"uri":                    pageURI(page),
		"page":                   page,
		"page_size":              pageSize,
		"start":                  start,
		"end":                    max(end-1, start),
	})
}

// number fetches (GET) or updates (POST) one of the account's numbers.
func (s *Server) number(w http.ResponseWriter, r *http.Request, sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.numberBySID(sid)
	if n == nil {
		writeError(w, http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	if r.Method == http.MethodPost {
		n.update(r)
		n.updated = time.Now().UTC().Truncate(time.Second)
	}
	writeJSON(w, http.StatusOK, n.json())
}

// releaseNumber always answers 204, also for a number the fake never issued, so tests can
// release ids they seeded themselves.
func (s *Server) releaseNumber(w http.ResponseWriter, sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, sid)
	for i, n := range s.numbers {
		if n.sid == sid {
			s.numbers = append(s.numbers[:i], s.numbers[i+1:]...)
			break
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// update applies the webhook fields a request sets; the ones it leaves out keep their value.
func (n *number) update(r *http.Request) {
	set := func(field string, to *string) {
		if _, ok := r.PostForm[field]; ok {
			*to = r.PostForm.Get(field)
		}
	}
	set("SmsUrl", &n.smsURL)
	set("SmsMethod", &n.smsMethod)
	set("VoiceUrl", &n.voiceURL)
	set("VoiceMethod", &n.voiceMethod)
	set("StatusCallback", &n.statusCallback)
	set("StatusCallbackMethod", &n.statusCBM)
}

func (n *number) json() map[string]any {
	return map[string]any{
		"sid": n.sid, "account_sid": AccountSID, "phone_number": n.phoneNumber, "friendly_name": n.phoneNumber,
		"sms_url": n.smsURL, "sms_method": n.smsMethod, "sms_fallback_url": "", "sms_fallback_method": http.MethodPost,
		"sms_application_sid": "", "status_callback": n.statusCallback, "status_callback_method": n.statusCBM,
		"voice_url": n.voiceURL, "voice_method": n.voiceMethod, "voice_fallback_url": "", "voice_fallback_method": http.MethodPost,
		"voice_caller_id_lookup": false, "voice_application_sid": "", "voice_receive_mode": "voice", "trunk_sid": nil,
		"capabilities":         map[string]bool{"voice": true, "sms": true, "mms": true, "fax": false},
		"address_requirements": "none", "address_sid": nil, "identity_sid": nil, "bundle_sid": nil, "beta": false,
		"emergency_status": "Inactive", "emergency_address_sid": nil, "emergency_address_status": "unregistered",
		"origin": "twilio", "status": "in-use", "api_version": "2010-04-01",
		"date_created": n.created.Format(time.RFC1123Z), "date_updated": n.updated.Format(time.RFC1123Z),
		"uri": accountPath + "IncomingPhoneNumbers/" + n.sid + ".json",
	}
}

// matchPattern reports whether pattern occurs in phone, '*' matching any one character; an
// empty pattern matches every number.
func matchPattern(phone, pattern string) bool {
	for i := 0; i+len(pattern) <= len(phone); i++ {
		ok := true
		for j := 0; j < len(pattern) && ok; j++ {
			ok = pattern[j] == '*' || pattern[j] == phone[i+j]
		}
		if ok {
			return true
		}
	}
	return false
}

func intParam(raw string, def int) int {
	var n int
	if _, err := fmt.Sscan(raw, &n); err != nil || n < 0 {
		return def
	}
	return n
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "status": status, "more_info": "https://www.twilio.com/docs/errors/" + fmt.Sprint(code)})
}
