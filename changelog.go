// Package switchboard holds what belongs to the whole repository rather than to one
// package: the changelog of the published contracts, embedded so the server can serve it.
package switchboard

import _ "embed"

// Changelog is CHANGELOG.md, served at /changelog.
//
//go:embed CHANGELOG.md
var Changelog []byte
