package blueprint

import (
	"bytes"
	_ "embed"
)

//go:embed schema.json
var schema []byte

// JSONSchema returns a JSON Schema (draft 2020-12) of the blueprint format, for editors and
// clients. Parse is authoritative: the schema approximates with patterns the checks that need
// data (known BCP 47 subtags, IANA time zones) and cannot compare start with end in a day's
// hours. Everything Parse accepts, the schema accepts.
func JSONSchema() []byte { return bytes.Clone(schema) }
