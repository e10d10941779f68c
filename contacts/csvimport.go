package contacts

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"switchboard/apierr"
	"switchboard/store"
)

// Import limits.
const (
	MaxImportBytes = 5 << 20
	MaxImportRows  = 10_000
	maxRowErrors   = 1000
)

// RowError is why one row of an import was not imported. Row counts the lines of the file
// from 1, the header being row 1.
type RowError struct {
	Row     int    `json:"row"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ImportResult reports an import: what was created, what updated (a row whose phone or
// email is already a live contact's updates that contact), and the rows refused.
type ImportResult struct {
	Object   string     `json:"object"`
	Rows     int        `json:"rows"`
	Created  int        `json:"created"`
	Updated  int        `json:"updated"`
	Failed   int        `json:"failed"`
	Errors   []RowError `json:"errors"`
	Truncate bool       `json:"errors_truncated"`
}

// columns are the header names an import reads (case-insensitive); a header must name
// phone or email, others are optional; unknown columns are refused so a typo is not
// silently dropped.
var columns = map[string]bool{"name": true, "email": true, "phone": true, "tags": true, "lists": true,
	"consent_sms": true, "consent_calls": true, "timezone": true}

// Import reads a CSV file of contacts (a header row, then one contact a row) and stores the
// valid rows in one transaction; each invalid row is reported with its row number, field
// and message, and nothing of it is written. Tags and lists are separated by `;` or `|`;
// consent columns read true/false, yes/no, 1/0 (empty: false). list, when not empty, is a
// list every imported contact joins.
func (s *Service) Import(ctx context.Context, ws uuid.UUID, data []byte, list string) (ImportResult, error) {
	res := ImportResult{Object: "contact_import", Errors: []RowError{}}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a spreadsheet's byte-order mark
	if len(bytes.TrimSpace(data)) == 0 {
		return res, apierr.Invalid("file", "empty_file", "The CSV file is empty.")
	}
	if !utf8.Valid(data) {
		return res, apierr.Invalid("file", "invalid_encoding", "The CSV file must be UTF-8.")
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	header, err := r.Read()
	if err != nil {
		return res, apierr.Invalid("file", "invalid_csv", "The CSV header cannot be read: %v.", err)
	}
	index := map[string]int{}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(h))
		if !columns[h] {
			return res, apierr.Invalid("file", "unknown_column", "Column %d of the header, %q, is not one of name, email, phone, tags, lists, consent_sms, consent_calls, timezone.", i+1, h)
		}
		if _, dup := index[h]; dup {
			return res, apierr.Invalid("file", "duplicate_column", "The header names %q twice.", h)
		}
		index[h] = i
	}
	_, hasPhone := index["phone"]
	_, hasEmail := index["email"]
	if !hasPhone && !hasEmail {
		return res, apierr.Invalid("file", "missing_column", "The header needs a phone or an email column.")
	}
	list = strings.TrimSpace(list)
	if len([]rune(list)) > MaxListLen {
		return res, apierr.Invalid("list", "invalid_value", "list must be at most %d characters.", MaxListLen)
	}
	type row struct {
		n     int
		in    store.NewContact
		lists []string
	}
	var rows []row
	for n := 2; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if res.Rows++; res.Rows > MaxImportRows {
			return ImportResult{}, apierr.Invalid("file", "too_many_rows", "An import takes at most %d rows; split the file.", MaxImportRows)
		}
		if err != nil {
			res.fail(n, "", fmt.Sprintf("the row cannot be read: %v", err))
			continue
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			res.Rows--
			continue // a blank line
		}
		in, field, err := parseRow(rec, index)
		if err != nil {
			res.fail(n, field, err.Error())
			continue
		}
		nc, err := validate(in, "")
		if err != nil {
			e := apierr.As(err)
			res.fail(n, e.Param, e.Message)
			continue
		}
		nc.Source = SourceImport
		lists := in.Lists
		if list != "" {
			lists = append(lists, list)
		}
		rows = append(rows, row{n: n, in: nc, lists: lists})
	}
	var phones, lists []string
	for _, rw := range rows {
		if rw.in.Phone != nil {
			phones = append(phones, *rw.in.Phone)
		}
		lists = append(lists, rw.lists...)
	}
	err = s.store.InTx(ctx, func(tx *store.Tx) error {
		res.Created, res.Updated = 0, 0
		// The contacts the file updates are locked first, in id order, as a bulk soft
		// delete locks them, rather than one by one in the file's order.
		if len(phones) > 0 {
			if err := tx.LockLiveContactsByPhone(ctx, ws, phones); err != nil {
				return err
			}
		}
		listIDs, err := ensureLists(ctx, tx, ws, lists) // each list once, in ensureLists' order
		if err != nil {
			return err
		}
		for _, rw := range rows {
			existing, err := matchExisting(ctx, tx, ws, rw.in)
			if err != nil {
				return err
			}
			id := existing.ID
			if existing.ID == uuid.Nil {
				c, err := tx.InsertContact(ctx, ws, rw.in)
				if err != nil {
					return err
				}
				id = c.ID
				res.Created++
			} else {
				merged := rw.in
				merged.Tags = union(existing.Tags, rw.in.Tags)
				if merged.Name == nil {
					merged.Name = existing.Name
				}
				if merged.Email == nil {
					merged.Email = existing.Email
				}
				if merged.Phone == nil {
					merged.Phone = existing.Phone
				}
				if merged.Timezone == nil {
					merged.Timezone = existing.Timezone
				}
				if _, err := tx.UpdateContact(ctx, ws, id, merged); err != nil {
					return err
				}
				res.Updated++
			}
			for _, l := range rw.lists {
				if err := tx.AddContactToList(ctx, ws, listIDs[strings.ToLower(l)], id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

func (r *ImportResult) fail(row int, field, msg string) {
	r.Failed++
	if len(r.Errors) >= maxRowErrors {
		r.Truncate = true
		return
	}
	r.Errors = append(r.Errors, RowError{Row: row, Field: field, Message: msg})
}

// matchExisting is the live contact with the row's phone (else email); the zero record when
// none.
func matchExisting(ctx context.Context, tx *store.Tx, ws uuid.UUID, in store.NewContact) (store.ContactRecord, error) {
	if in.Phone == nil {
		return store.ContactRecord{}, nil
	}
	c, err := tx.LiveContactByPhone(ctx, ws, *in.Phone)
	if errors.Is(err, store.ErrNotFound) {
		return store.ContactRecord{}, nil
	}
	return c, err
}

func union(a, b []string) []string {
	out := append([]string{}, a...)
	seen := map[string]bool{}
	for _, t := range a {
		seen[strings.ToLower(t)] = true
	}
	for _, t := range b {
		if !seen[strings.ToLower(t)] {
			seen[strings.ToLower(t)] = true
			out = append(out, t)
		}
	}
	return out
}

// parseRow reads one record into an Input; on failure it names the field.
func parseRow(rec []string, index map[string]int) (Input, string, error) {
	get := func(col string) (string, bool) {
		i, ok := index[col]
		if !ok || i >= len(rec) {
			return "", false
		}
		return strings.TrimSpace(rec[i]), true
	}
	var in Input
	if v, ok := get("name"); ok && v != "" {
		in.Name = &v
	}
	if v, ok := get("email"); ok && v != "" {
		in.Email = &v
	}
	if v, ok := get("phone"); ok && v != "" {
		in.Phone = &v
	}
	if v, ok := get("timezone"); ok && v != "" {
		in.Timezone = &v
	}
	if v, ok := get("tags"); ok {
		in.Tags = splitNames(v)
	}
	if v, ok := get("lists"); ok {
		in.Lists = splitNames(v)
	}
	for _, col := range []string{"consent_sms", "consent_calls"} {
		v, _ := get(col)
		b, ok := parseBool(v)
		if !ok {
			return in, col, fmt.Errorf("%s must be true or false (yes/no, 1/0), not %q", col, v)
		}
		if col == "consent_sms" {
			in.ConsentSMS = &b
		} else {
			in.ConsentCalls = &b
		}
	}
	return in, "", nil
}

func splitNames(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '|' })
}

func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "false", "no", "n", "0":
		return false, true
	case "true", "yes", "y", "1":
		return true, true
	}
	return false, false
}
