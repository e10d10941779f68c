// Package mailtest is an SMTP sink for tests: a local server that accepts every message and
// keeps it, so a test can read what the code under test sent through a real SMTP exchange.
package mailtest

import (
	"bufio"
	"mime"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
)

// Mail is one message the sink received.
type Mail struct {
	From    string
	To      []string
	Subject string // decoded
	Body    string
	Raw     string
}

// Sink is a running SMTP server; it stops when the test ends.
type Sink struct {
	Addr string // host:port

	ln       net.Listener
	mu       sync.Mutex
	received []Mail
	notify   chan struct{}
}

// New starts a sink on a loopback port.
func New(t testing.TB) *Sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	s := &Sink{Addr: ln.Addr().String(), ln: ln, notify: make(chan struct{}, 1)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return s
}

// URL is the SMTP_URL that reaches the sink.
func (s *Sink) URL() string { return "smtp://" + s.Addr }

// Messages returns what the sink received so far.
func (s *Sink) Messages() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Mail(nil), s.received...)
}

// Received is signalled (without blocking) each time a message arrives.
func (s *Sink) Received() <-chan struct{} { return s.notify }

func (s *Sink) serve(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	reply := func(line string) bool {
		_, err := w.WriteString(line + "\r\n")
		return err == nil && w.Flush() == nil
	}
	if !reply("220 mailtest ESMTP") {
		return
	}
	var cur Mail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(line)
		switch {
		case strings.HasPrefix(verb, "EHLO"), strings.HasPrefix(verb, "HELO"):
			reply("250-mailtest\r\n250 8BITMIME")
		case strings.HasPrefix(verb, "MAIL FROM:"):
			cur = Mail{From: strings.Trim(line[len("MAIL FROM:"):], " <>")}
			if i := strings.Index(cur.From, ">"); i >= 0 {
				cur.From = cur.From[:i]
			}
			reply("250 OK")
		case strings.HasPrefix(verb, "RCPT TO:"):
			to := strings.Trim(line[len("RCPT TO:"):], " <>")
			cur.To = append(cur.To, to)
			reply("250 OK")
		case verb == "DATA":
			reply("354 end with .")
			var data strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if strings.TrimRight(l, "\r\n") == "." {
					break
				}
				data.WriteString(strings.TrimPrefix(l, "."))
			}
			cur.Raw = data.String()
			if msg, err := mail.ReadMessage(strings.NewReader(cur.Raw)); err == nil {
				cur.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
				if err != nil {
					cur.Subject = msg.Header.Get("Subject")
				}
				body := new(strings.Builder)
				_, _ = bufio.NewReader(msg.Body).WriteTo(body)
				cur.Body = strings.ReplaceAll(body.String(), "\r\n", "\n")
			}
			s.mu.Lock()
			s.received = append(s.received, cur)
			s.mu.Unlock()
			select {
			case s.notify <- struct{}{}:
			default:
			}
			reply("250 OK queued")
		case verb == "QUIT":
			reply("221 bye")
			return
		case verb == "RSET", verb == "NOOP":
			reply("250 OK")
		default:
			reply("502 not implemented")
		}
	}
}
