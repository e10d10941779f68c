// Package mailer sends email through the SMTP server that SMTP_URL names, for escalation
// notifications (and, later, invitations).
//
// It speaks SMTP with Go's net/smtp: the protocol needs no more than the standard library
// offers (EHLO, STARTTLS, AUTH PLAIN, one message), and net/smtp is frozen but maintained
// with the language. Only the dial and the deadline are added here, so that a call honours
// its context.
//
// SMTP_URL forms: smtp://[user:pass@]host[:port] (port 587 by default; STARTTLS whenever the
// server offers it, and required before AUTH unless the host is a loopback address),
// smtps://... (implicit TLS, port 465 by default). The sender address is the `from` query
// parameter (smtp://host:587?from=bot%40example.com), by default noreply@ the host of
// PUBLIC_BASE_URL.
package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"time"
)

// ErrNotConfigured is returned by Send when SMTP_URL is not set.
var ErrNotConfigured = errors.New("mailer: SMTP_URL is not set")

// Message is one plain-text email.
type Message struct {
	To      []string
	Subject string
	Body    string
	// ID, when set, is the local part of the Message-ID header (<ID@the sender's domain>):
	// a message sent again with the same ID (a resumed job) is the same message to mail
	// systems that discard duplicates by Message-ID. Characters outside a dot-atom are dropped.
	ID string
}

// Sender sends mail through one SMTP server. A nil *Sender is valid and sends nothing (it
// returns ErrNotConfigured).
type Sender struct {
	host     string // host:port
	implicit bool   // smtps
	user     string
	pass     string
	from     string
	timeout  time.Duration
}

// New reads an SMTP_URL; an empty one gives a nil Sender. defaultFrom is the sender address
// when the URL names none.
func New(raw, defaultFrom string) (*Sender, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, errors.New("SMTP_URL must be smtp://[user:pass@]host[:port] or smtps://[user:pass@]host[:port]")
	}
	s := &Sender{from: defaultFrom, timeout: 30 * time.Second}
	port := "587"
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.implicit, port = true, "465"
	default:
		return nil, fmt.Errorf("SMTP_URL: scheme %q is not smtp or smtps", u.Scheme)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	s.host = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		s.user = u.User.Username()
		s.pass, _ = u.User.Password()
	}
	if f := u.Query().Get("from"); f != "" {
		s.from = f
	}
	if _, err := mail.ParseAddress(s.from); err != nil {
		return nil, fmt.Errorf("SMTP_URL: sender address %q: %w", s.from, err)
	}
	return s, nil
}

// Send delivers one message.
func (s *Sender) Send(ctx context.Context, m Message) error {
	if s == nil {
		return ErrNotConfigured
	}
	for _, to := range m.To {
		if _, err := mail.ParseAddress(to); err != nil || strings.ContainsAny(to, "\r\n") {
			return fmt.Errorf("mailer: recipient %q is not an email address", to)
		}
	}
	if len(m.To) == 0 {
		return errors.New("mailer: no recipient")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	conn, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("mailer: connect to %s: %w", s.host, err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	host, _, _ := net.SplitHostPort(s.host)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return fmt.Errorf("mailer: %w", err)
	}
	defer c.Close()
	if err := c.Hello("switchboard"); err != nil {
		return fmt.Errorf("mailer: EHLO: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && !s.implicit {
		if err := c.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return fmt.Errorf("mailer: STARTTLS: %w", err)
		}
	}
	if s.user != "" {
		// smtp.PlainAuth refuses to send the password without TLS, except to localhost.
		if err := c.Auth(smtp.PlainAuth("", s.user, s.pass, host)); err != nil {
			return fmt.Errorf("mailer: AUTH: %w", err)
		}
	}
	if err := c.Mail(s.from); err != nil {
		return fmt.Errorf("mailer: MAIL FROM: %w", err)
	}
	for _, to := range m.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("mailer: RCPT TO %s: %w", to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("mailer: DATA: %w", err)
	}
	if _, err := w.Write(s.compose(m)); err != nil {
		return fmt.Errorf("mailer: DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("mailer: DATA: %w", err)
	}
	return c.Quit()
}

func (s *Sender) dial(ctx context.Context) (net.Conn, error) {
	if s.implicit {
		host, _, _ := net.SplitHostPort(s.host)
		d := &tls.Dialer{Config: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}}
		return d.DialContext(ctx, "tcp", s.host)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", s.host)
}

// compose writes the headers and the body, with CRLF line ends. The subject is Q-encoded
// when it is not plain ASCII, and a line break in it cannot start another header.
func (s *Sender) compose(m Message) []byte {
	subject := strings.Join(strings.Fields(m.Subject), " ")
	var b strings.Builder
	b.WriteString("From: " + s.from + "\r\n")
	b.WriteString("To: " + strings.Join(m.To, ", ") + "\r\n")
	b.WriteString("Subject: " + mimeWord(subject) + "\r\n")
	b.WriteString("Date: " + time.Now().UTC().Format(time.RFC1123Z) + "\r\n")
	if id := messageID(m.ID, s.from); id != "" {
		b.WriteString("Message-ID: " + id + "\r\n")
	}
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	body := strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\r\n") {
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}

// messageID is <id@domain of from>, with id kept to the characters of a dot-atom; "" when
// nothing is left.
func messageID(id, from string) string {
	id = strings.Map(func(r rune) rune {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_+=", r)) {
			return r
		}
		return -1
	}, id)
	id = strings.Trim(id, ".")
	if id == "" {
		return ""
	}
	domain := "localhost"
	if at := strings.LastIndexByte(from, '@'); at >= 0 {
		domain = strings.Trim(from[at+1:], "<> ")
	}
	return "<" + id + "@" + domain + ">"
}

func mimeWord(s string) string { return mime.QEncoding.Encode("utf-8", s) }
