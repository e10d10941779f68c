package workflows

import _ "embed"

// schema is the JSON Schema of a workflow document, for editors (served at
// /schemas/workflow.json). Parse is the authority: it also checks expressions, cron
// expressions and time zones, which a schema cannot.
//
//go:embed schema.json
var schema []byte

// JSONSchema is the JSON Schema of a workflow document.
func JSONSchema() []byte { return schema }
