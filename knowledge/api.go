package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/netguard"
)

// Fetcher reads the document of an api source.
type Fetcher struct {
	// Client makes the request; in production netguard's client, which refuses private
	// addresses at dial time and follows no redirect.
	Client *http.Client
	// CheckURL refuses a URL before any request (netguard's CheckURL).
	CheckURL func(ctx context.Context, url string) error
	// MaxBytes caps the answer's body; a longer one fails the source (default 2 MiB).
	MaxBytes int64
	// Timeout bounds the whole request (default 20 s).
	Timeout time.Duration
}

// TransientError is a failure that may pass if tried again later: no answer in time, a
// connection that failed, or an answer of 429 or 5xx.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }

func (e *TransientError) Unwrap() error { return e.Err }

// UserAgent names the service in the requests of api sources.
const UserAgent = "SwitchboardBot/1.0 (+https://switchboard.example/bot)"

// Fetch GETs url once and reads its answer: JSON (application/json, any +json type, or a
// body that parses as JSON) is flattened by JSONText, HTML read as the crawler reads pages,
// other text taken as it is. It fails, saying why, on a refused address, a redirect (give the
// final URL), a status other than 2xx, an answer over MaxBytes, a binary answer, or a
// timeout; a *TransientError is one that may pass (timeout, failed connection, 429, 5xx).
func (f Fetcher) Fetch(ctx context.Context, url string) (Document, error) {
	maxBytes := f.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 2 << 20
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	if f.CheckURL != nil {
		if err := f.CheckURL(ctx, url); err != nil {
			return Document{}, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Document{}, fmt.Errorf("invalid URL: %w", err)
	}
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, text/*;q=0.8")
	req.Header.Set("User-Agent", UserAgent)
	resp, err := f.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Document{}, &TransientError{fmt.Errorf("no answer within %s", timeout)}
		}
		if errors.Is(err, netguard.ErrBlocked) {
			return Document{}, err
		}
		return Document{}, &TransientError{fmt.Errorf("the request failed: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Document{}, fmt.Errorf("the URL answered HTTP %d, a redirect to %q; give the final URL", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return Document{}, &TransientError{fmt.Errorf("the URL answered HTTP %d", resp.StatusCode)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return Document{}, fmt.Errorf("the URL answered HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return Document{}, fmt.Errorf("reading the answer: %w", err)
	}
	if int64(len(body)) > maxBytes {
		return Document{}, fmt.Errorf("the answer is larger than %d bytes", maxBytes)
	}
	return answerText(resp.Header.Get("Content-Type"), body)
}

// answerText reads an API answer by its content type, or by its bytes when the type says
// nothing useful.
func answerText(contentType string, body []byte) (Document, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	mt = strings.ToLower(mt)
	var doc Document
	var err error
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		doc.Text, err = JSONText(body)
	case mt == "text/html" || mt == "application/xhtml+xml":
		return Extract(TextHTML, "", body)
	case strings.HasPrefix(mt, "text/") || mt == "" || mt == "application/octet-stream":
		if json.Valid(trimBOM(body)) && len(strings.TrimSpace(string(body))) > 0 {
			doc.Text, err = JSONText(body)
		} else if !utf8.Valid(trimBOM(body)) || strings.ContainsRune(string(body), 0) {
			return Document{}, errors.New("the answer is not UTF-8 text or JSON")
		} else {
			doc.Text = strings.ReplaceAll(string(trimBOM(body)), "\r\n", "\n")
		}
	default:
		return Document{}, fmt.Errorf("%w: the answer is %s; an api source reads JSON or text", ErrUnsupportedType, mt)
	}
	if err != nil {
		return Document{}, err
	}
	if strings.TrimSpace(doc.Text) == "" {
		return Document{}, errors.New("the answer has no text to index")
	}
	return doc, nil
}
