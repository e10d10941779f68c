package blueprint

import (
	_ "embed"
	"encoding/json"

	"switchboard/catalog"
)

// schema.json holds the shape of the format: objects, properties, lengths, patterns and the
// conditions between fields. It names no enumerated value: an enumerated property refers to
// a definition ($defs/tone, $defs/channel_type, ...) that JSONSchema adds from Enums, and the
// model lists come from the catalog, so the schema cannot drift from the validator.
//
//go:embed schema.json
var schemaShape []byte

// JSONSchema returns a JSON Schema (draft 2020-12) of the blueprint format, for editors and
// clients. Parse is authoritative: the schema approximates with patterns the checks that need
// data (known BCP 47 subtags, IANA time zones) and cannot compare start with end in a day's
// hours. Everything Parse accepts, the schema accepts.
func JSONSchema() []byte {
	var doc map[string]any
	if err := json.Unmarshal(schemaShape, &doc); err != nil {
		panic("blueprint/schema.json: " + err.Error()) // embedded and tested: cannot happen at run time
	}
	defs := doc["$defs"].(map[string]any)
	for _, e := range Enums() {
		defs[e.Def] = map[string]any{"enum": e.Values}
	}
	addModels(defs["llm"].(map[string]any), catalog.Default())
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // maps of JSON values always marshal
	}
	return out
}

// addModels lists the catalog's models as examples of llm.model (any string is valid), and
// for each provider refuses the ids served for the other families, as Parse does.
func addModels(llm map[string]any, cat *catalog.Catalog) {
	llm["properties"].(map[string]any)["model"].(map[string]any)["examples"] = cat.IDs()
	var branches []any
	for _, f := range Providers() {
		var others []string
		for _, m := range cat.All() {
			if m.Family != f {
				others = append(others, m.ID)
			}
		}
		branches = append(branches, map[string]any{
			"if":   map[string]any{"required": []string{"provider"}, "properties": map[string]any{"provider": map[string]any{"const": f}}},
			"then": map[string]any{"properties": map[string]any{"model": map[string]any{"not": map[string]any{"enum": others}}}},
		})
	}
	llm["allOf"] = branches
}
