package knowledge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxJSONDepth bounds the nesting JSONText follows, like every JSON the service reads.
const maxJSONDepth = 64

// JSONText flattens a JSON document into lines of `path: value`, in document order
// (`faq[0].question: What are your opening hours?`), so each value is found by its words and
// by the names around it. Each item of the top-level array (or each member of the top-level
// object) is a paragraph of its own, so a chunk holds whole records where it can. Nulls and
// empty values are left out.
func JSONText(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(trimBOM(data)))
	dec.UseNumber()
	var paras []string
	var lines []string
	emit := func(path, value string) { lines = append(lines, strings.TrimPrefix(path, ".")+": "+value) }
	var walk func(path string, depth int) error
	walk = func(path string, depth int) error {
		if depth > maxJSONDepth {
			return fmt.Errorf("the JSON is nested deeper than %d levels", maxJSONDepth)
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		top := depth == 1
		flush := func() {
			if top && len(lines) > 0 {
				paras = append(paras, strings.Join(lines, "\n"))
				lines = nil
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '[' {
				for i := 0; dec.More(); i++ {
					if err := walk(path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
						return err
					}
					flush()
				}
			} else {
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					if err := walk(path+"."+k.(string), depth+1); err != nil {
						return err
					}
					flush()
				}
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case string:
			if s := strings.TrimSpace(v); s != "" {
				if path == "" {
					path = "value"
				}
				emit(path, strings.Join(strings.Fields(s), " "))
			}
		case json.Number:
			emit(orValue(path), v.String())
		case bool:
			emit(orValue(path), strconv.FormatBool(v))
		}
		return nil
	}
	if err := walk("", 1); err != nil {
		return "", fmt.Errorf("the answer is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", errors.New("the answer is not valid JSON: more than one value")
	}
	if len(lines) > 0 {
		paras = append(paras, strings.Join(lines, "\n"))
	}
	return strings.Join(paras, "\n\n"), nil
}

func orValue(path string) string {
	if path == "" {
		return "value"
	}
	return path
}
