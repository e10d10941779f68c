package llm

import (
	"encoding/json"
	"math"
	"strconv"

	"switchboard/jsonappend"
)

// The request bodies of the two streaming adapters, encoded directly.
//
// The SDKs encode their parameter structs by reflection (every field's omitzero and union
// rules, every value through a marshaler); for the few shapes a turn sends, that was a tenth
// of an ephemeral turn's CPU (docs/benchmarks.md, issue 17). The adapters hand the SDK the
// finished bytes instead (its client.Post takes a []byte body as is, the way the SDKs
// document for raw requests); the SDK still makes the request, its headers, authentication
// and errors. TestBodiesEncodeAsTheSDKDoes holds these bytes to the SDK's own encoding of
// anthropicParams and openaiParams, plus the "stream":true the SDKs' NewStreaming adds. A
// request these functions do not take (ok false) goes through the SDK's encoding.

// anthropicToolJSON and openaiToolJSON keep each tool as the SDK encodes it (see toolCache).
var (
	anthropicToolJSON = toolCache[json.RawMessage]{encode: func(t Tool) (json.RawMessage, bool) {
		return compactTool(anthropicTool(t).MarshalJSON())
	}}
	openaiToolJSON = toolCache[json.RawMessage]{encode: func(t Tool) (json.RawMessage, bool) {
		return compactTool(openaiTool(t).MarshalJSON())
	}}
)

// compactTool keeps the SDK's bytes without the whitespace a schema brought along, so that
// a turn copies them as they are.
func compactTool(raw []byte, err error) (json.RawMessage, bool) {
	if err != nil {
		return nil, false
	}
	return appendCompact(nil, raw), true
}

// bodySize estimates a request's encoded size, so that the buffer grows once at most.
func bodySize(req Request) int {
	n := 256 + len(req.Model) + len(req.System)
	for _, m := range req.Messages {
		n += 64 + len(m.Text)
		for _, c := range m.ToolCalls {
			n += 96 + len(c.ID) + len(c.Name) + len(c.Arguments)
		}
		for _, r := range m.ToolResults {
			n += 96 + len(r.CallID) + len(r.Content)
		}
	}
	for _, t := range req.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return n
}

// anthropicBody is anthropicParams(req) as the SDK encodes it, with "stream":true when
// stream is set (as the SDK's NewStreaming adds it).
func anthropicBody(req Request, stream bool) ([]byte, bool) {
	if req.Temperature != nil && !finite(*req.Temperature) {
		return nil, false
	}
	b := make([]byte, 0, bodySize(req))
	b = append(b, `{"max_tokens":`...)
	b = strconv.AppendInt(b, maxTokens(req), 10)
	b = append(b, `,"messages":[`...)
	first := true
	for _, m := range userFirst(req.Messages) {
		start := len(b)
		if !first {
			b = append(b, ',')
		}
		switch m.Role {
		case RoleUser:
			b = append(b, `{"content":[{"text":`...)
			b = jsonappend.String(b, m.Text)
			b = append(b, `,"type":"text"}],"role":"user"}`...)
		case RoleAssistant:
			if m.Text == "" && len(m.ToolCalls) == 0 {
				b = b[:start] // no blocks: the message is left out
				continue
			}
			b = append(b, `{"content":[`...)
			comma := false
			if m.Text != "" { // the API rejects empty text blocks
				b = append(b, `{"text":`...)
				b = jsonappend.String(b, m.Text)
				b = append(b, `,"type":"text"}`...)
				comma = true
			}
			for _, tc := range m.ToolCalls {
				if comma {
					b = append(b, ',')
				}
				comma = true
				b = append(b, `{"id":`...)
				b = jsonappend.String(b, tc.ID)
				b = append(b, `,"input":`...)
				b = appendCompact(b, arguments(tc.Arguments))
				b = append(b, `,"name":`...)
				b = jsonappend.String(b, tc.Name)
				b = append(b, `,"type":"tool_use"}`...)
			}
			b = append(b, `],"role":"assistant"}`...)
		case RoleTool:
			b = append(b, `{"content":[`...)
			for i, r := range m.ToolResults {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"tool_use_id":`...)
				b = jsonappend.String(b, r.CallID)
				if r.Content != "" {
					b = append(b, `,"content":[{"text":`...)
					b = jsonappend.String(b, r.Content)
					b = append(b, `,"type":"text"}],"is_error":`...)
					b = strconv.AppendBool(b, r.IsError)
				} else if r.IsError {
					b = append(b, `,"is_error":true`...)
				}
				b = append(b, `,"type":"tool_result"}`...)
			}
			b = append(b, `],"role":"user"}`...)
		default:
			b = b[:start]
			continue
		}
		first = false
	}
	b = append(b, `],"model":`...)
	b = jsonappend.String(b, req.Model)
	if req.System != "" {
		b = append(b, `,"system":[{"text":`...)
		b = jsonappend.String(b, req.System)
		b = append(b, `,"type":"text"}]`...)
	}
	if req.Temperature != nil {
		// Anthropic's scale stops at 1; a blueprint's 0 to 2 is clamped to it.
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, min(*req.Temperature, 1))
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			raw := anthropicToolJSON.get(t)
			if raw == nil { // the SDK could not encode it: its own path says why
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, raw...) // compacted when cached
		}
		b = append(b, ']')
	}
	if stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), true
}

// openaiBody is openaiParams(req, stream) as the SDK encodes it, with "stream":true when
// stream is set.
func openaiBody(req Request, stream bool) ([]byte, bool) {
	if req.Temperature != nil && !finite(*req.Temperature) {
		return nil, false
	}
	b := make([]byte, 0, bodySize(req))
	b = append(b, `{"messages":[`...)
	comma := false
	sep := func() {
		if comma {
			b = append(b, ',')
		}
		comma = true
	}
	if req.System != "" {
		sep()
		b = append(b, `{"content":`...)
		b = jsonappend.String(b, req.System)
		b = append(b, `,"role":"system"}`...)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			sep()
			b = append(b, `{"content":`...)
			b = jsonappend.String(b, m.Text)
			b = append(b, `,"role":"user"}`...)
		case RoleAssistant:
			sep()
			b = append(b, `{"role":"assistant"`...)
			if m.Text != "" || len(m.ToolCalls) == 0 {
				b = append(b, `,"content":`...)
				b = jsonappend.String(b, m.Text)
			}
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for i, tc := range m.ToolCalls {
					if i > 0 {
						b = append(b, ',')
					}
					b = append(b, `{"id":`...)
					b = jsonappend.String(b, tc.ID)
					b = append(b, `,"function":{"arguments":`...)
					b = jsonappend.String(b, string(arguments(tc.Arguments)))
					b = append(b, `,"name":`...)
					b = jsonappend.String(b, tc.Name)
					b = append(b, `},"type":"function"}`...)
				}
				b = append(b, ']')
			}
			b = append(b, '}')
		case RoleTool:
			// One role=tool message per result (see openaiMessages).
			for _, r := range m.ToolResults {
				sep()
				b = append(b, `{"content":`...)
				b = jsonappend.String(b, r.Content)
				b = append(b, `,"tool_call_id":`...)
				b = jsonappend.String(b, r.CallID)
				b = append(b, `,"role":"tool"}`...)
			}
		}
	}
	b = append(b, `],"model":`...)
	b = jsonappend.String(b, req.Model)
	b = append(b, `,"max_completion_tokens":`...)
	b = strconv.AppendInt(b, maxTokens(req), 10)
	if stream {
		// Without include_usage a streamed completion reports no token counts at all.
		b = append(b, `,"stream_options":{"include_usage":true}`...)
	}
	if req.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = appendFloat(b, *req.Temperature)
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			raw := openaiToolJSON.get(t)
			if raw == nil { // the SDK could not encode it: its own path says why
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, raw...) // compacted when cached
		}
		b = append(b, ']')
	}
	if stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat writes f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

// appendCompact writes valid JSON (checked by checkRequest, or the SDK's own output) without
// its insignificant whitespace, as the SDKs send raw JSON.
func appendCompact(b []byte, raw []byte) []byte {
	inString, escaped := false, false
	for _, c := range raw {
		if inString {
			b = append(b, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\n', '\t', '\r':
		case '"':
			inString = true
			b = append(b, c)
		default:
			b = append(b, c)
		}
	}
	return b
}
