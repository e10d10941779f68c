// Package openapi holds the published contracts, edited by hand and embedded in the binary so
// the server can serve them and tests can validate responses against them.
package openapi

import _ "embed"

// V1YAML is openapi/v1.yaml, the /v1 contract.
//
//go:embed v1.yaml
var V1YAML []byte

// APIYAML is openapi/api.yaml, the /api contract.
//
//go:embed api.yaml
var APIYAML []byte

// EmbedYAML is openapi/embed.yaml, the public webchat routes (no API key).
//
//go:embed embed.yaml
var EmbedYAML []byte
