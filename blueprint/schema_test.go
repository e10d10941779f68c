package blueprint

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"switchboard/catalog"
)

func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("blueprint.json", doc))
	s, err := c.Compile("blueprint.json") // also checks it against the 2020-12 meta-schema
	require.NoError(t, err)
	return s
}

// instance decodes JSON the way the schema library wants it (numbers as json.Number).
func instance(t testing.TB, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	return v
}

// yamlToJSON converts a YAML document to JSON as a client validating with the schema would,
// with the same reading of scalars as Parse (so `yes` stays a string). ok is false when data
// is not YAML at all.
func yamlToJSON(t testing.TB, data []byte) (_ []byte, ok bool) {
	t.Helper()
	root, errs := parseYAML(data)
	if errs != nil {
		return nil, false
	}
	var v any
	if root != nil {
		v = newDecoder().value(root, "", 0)
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out, true
}

// TestSchemaAgreesWithParse holds the JSON Schema equal to Parse on every example: it accepts
// each valid one and rejects each invalid one. The exceptions are marked `# schema: accepts`
// in the file, with the reason; the test checks that the schema does accept those, so a mark
// cannot go stale. They are rules JSON Schema cannot state exactly:
//   - start before end in a day's hours: JSON Schema cannot compare two values;
//   - a known BCP 47 language and an existing IANA time zone: the schema checks the shape of
//     the tag and of the zone name by pattern, the lists themselves live in x/text and in
//     the tz database;
//   - duplicate keys: a JSON object cannot hold a key twice, so the conversion keeps one.
//
// llm.model's family is stated exactly, with one if/then per provider (see
// TestSchemaModelsMatchCatalog). A file that is not YAML at all has no JSON form; no schema
// can accept it, which counts as rejecting.
func TestSchemaAgreesWithParse(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	for _, ex := range examples(t, "valid") {
		doc, ok := yamlToJSON(t, ex.data)
		require.True(t, ok, ex.name)
		require.NoError(t, s.Validate(instance(t, doc)), "valid/%s", ex.name)
	}
	for _, ex := range examples(t, "invalid") {
		doc, ok := yamlToJSON(t, ex.data)
		if !ok {
			require.False(t, ex.schemaAccepts, "invalid/%s is not YAML; the schema cannot accept it", ex.name)
			continue
		}
		err := s.Validate(instance(t, doc))
		if ex.schemaAccepts {
			require.NoError(t, err, "invalid/%s is marked `# schema: accepts`", ex.name)
		} else {
			require.Error(t, err, "invalid/%s: the schema accepts what Parse rejects", ex.name)
		}
	}
}

func schemaDoc(t testing.TB) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(JSONSchema(), &doc))
	return doc
}

// at walks a schema document by keys and array indexes ("$defs", "llm", "allOf", "0", ...).
func at(t testing.TB, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		switch node := v.(type) {
		case map[string]any:
			require.Contains(t, node, k, "schema path %v", keys)
			v = node[k]
		case []any:
			i := int(k[0] - '0')
			require.Less(t, i, len(node), "schema path %v", keys)
			v = node[i]
		default:
			t.Fatalf("schema path %v: %T at %q", keys, v, k)
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// The schema's model and provider lists follow the catalog. llm.model is a string (the spec:
// "agent.llm.model | string"): the served ids are examples, not an enum, and each provider's
// branch refuses only the ids served for the other families.
func TestSchemaModelsMatchCatalog(t *testing.T) {
	t.Parallel()
	doc := schemaDoc(t)
	cat := catalog.Default()
	model := at(t, doc, "$defs", "llm", "properties", "model").(map[string]any)
	require.NotContains(t, model, "enum", "any model name is valid")
	require.Equal(t, "string", model["type"])
	require.Equal(t, cat.IDs(), strs(model["examples"]))
	var families []string
	for _, f := range catalog.Families {
		families = append(families, string(f))
	}
	require.Equal(t, families, strs(at(t, doc, "$defs", "provider", "enum")))
	for i, f := range catalog.Families {
		branch := at(t, doc, "$defs", "llm", "allOf", string(rune('0'+i)))
		require.Equal(t, string(f), at(t, branch, "if", "properties", "provider", "const"))
		var others []string
		for _, id := range cat.IDs() {
			if !slices.Contains(familyModels(cat, f), id) {
				others = append(others, id)
			}
		}
		require.Equal(t, others, strs(at(t, branch, "then", "properties", "model", "not", "enum")))
	}
}

// Each struct's fields are the properties of its schema object, and each field with the enum
// tag refers to the definition holding its type's values.
func TestSchemaMatchesStructs(t *testing.T) {
	t.Parallel()
	doc := schemaDoc(t)
	objects := map[reflect.Type][]string{
		reflect.TypeFor[Blueprint]():     nil,
		reflect.TypeFor[Agent]():         {"$defs", "agent"},
		reflect.TypeFor[Persona]():       {"$defs", "persona"},
		reflect.TypeFor[LLM]():           {"$defs", "llm"},
		reflect.TypeFor[KnowledgeBase](): {"$defs", "knowledge_base"},
		reflect.TypeFor[Source]():        {"$defs", "source"},
		reflect.TypeFor[Channel]():       {"$defs", "channel"},
		reflect.TypeFor[BusinessRules](): {"$defs", "business_rules"},
		reflect.TypeFor[BusinessHours](): {"$defs", "business_hours"},
		reflect.TypeFor[Schedule]():      {"$defs", "schedule"},
		reflect.TypeFor[Hours]():         {"$defs", "day", "anyOf", "1"},
		reflect.TypeFor[Escalation]():    {"$defs", "escalation"},
		reflect.TypeFor[Tool]():          {"$defs", "tool"},
	}
	for typ, path := range objects {
		obj := at(t, doc, path...).(map[string]any)
		require.Equal(t, false, obj["additionalProperties"], typ)
		props := obj["properties"].(map[string]any)
		var fields, required []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			fields = append(fields, name)
			tag := f.Tag.Get("validate")
			if strings.HasPrefix(tag, "required,") || tag == "required" || name == "agent" {
				required = append(required, name)
			}
			if slices.Contains(strings.Split(tag, ","), "enum") {
				ref := strings.TrimPrefix(at(t, props, name, "$ref").(string), "#/")
				require.Equal(t, EnumValues(f.Type), strs(at(t, doc, append(strings.Split(ref, "/"), "enum")...)), "%s.%s", typ, name)
			}
		}
		var names []string
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(fields)
		slices.Sort(names)
		require.Equal(t, fields, names, typ)
		var schemaRequired []string
		if r, ok := obj["required"]; ok {
			schemaRequired = strs(r)
		}
		require.ElementsMatch(t, required, schemaRequired, typ)
	}
}
