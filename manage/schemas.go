package manage

import (
	"encoding/json"
	"reflect"

	"github.com/invopop/jsonschema"
)

// An operation's input schema is derived from its Go input type, so the MCP tools, the
// builder assistant's tools and the decoder read one definition: json tags name the
// properties (without omitempty a property is required), jsonschema tags carry the
// constraints, an enumerated type brings its list (enums), and a type's JSONSchemaExtend
// adds what a tag cannot say. invopop/jsonschema does the reflection because its tags carry
// every constraint of the contract (lengths, bounds, formats, defaults); the schema helpers
// of mcp-go (google/jsonschema-go) take only descriptions and enums.

// inputSchema is the JSON Schema of an operation's input type In.
func inputSchema[In any]() json.RawMessage {
	s := reflector().Reflect(new(In))
	s.Version = "" // a tool's input schema is embedded in a tool definition, not a document
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err) // a schema of plain values always marshals
	}
	return raw
}

// reflector inlines every type (a tool schema has no $defs) and forbids unknown properties,
// as the decoder does.
func reflector() *jsonschema.Reflector {
	values := map[reflect.Type][]string{}
	for _, e := range enums() {
		values[e.Type] = e.Values
	}
	return &jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			switch {
			case values[t] != nil:
				s := &jsonschema.Schema{Type: "string"}
				for _, v := range values[t] {
					s.Enum = append(s.Enum, v)
				}
				return s
			case t.Kind() == reflect.String && t.Implements(reflect.TypeFor[Enumerated]()):
				s := &jsonschema.Schema{Type: "string"}
				for _, v := range reflect.Zero(t).Interface().(Enumerated).EnumValues() {
					s.Enum = append(s.Enum, v)
				}
				return s
			case t == reflect.TypeFor[json.RawMessage]():
				return &jsonschema.Schema{Type: "object"} // config objects, passed through as given
			}
			return nil
		},
	}
}

// Enumerated is a string type of an input defined outside this package that lists its own
// values (package bulk's filters): the schema of a field of that type enumerates them, so no
// tag repeats the list.
type Enumerated interface {
	EnumValues() []string
}

// property returns the schema of one property of an object schema.
func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties.Get(name)
	if !ok {
		panic("schema has no property " + name) // a renamed field; the schema tests catch it
	}
	return p
}

// nullable lets a string property be null too.
func nullable(p *jsonschema.Schema) {
	p.Extras = map[string]any{"type": []string{p.Type, "null"}}
	p.Type = ""
}
