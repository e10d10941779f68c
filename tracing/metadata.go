package tracing

import (
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
)

// withTraceContext adds the carrier to a job's metadata (a JSON object, possibly empty).
func withTraceContext(metadata []byte, carrier propagation.MapCarrier) []byte {
	m := map[string]json.RawMessage{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m); err != nil {
			return metadata // not ours to repair
		}
	}
	raw, err := json.Marshal(map[string]string(carrier))
	if err != nil {
		return metadata
	}
	m[jobMetadataKey] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return metadata
	}
	return out
}

// traceContextOf reads the carrier a job was inserted with; empty when none.
func traceContextOf(metadata []byte) propagation.MapCarrier {
	var m struct {
		Otel map[string]string `json:"otel"`
	}
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil || m.Otel == nil {
		return propagation.MapCarrier{}
	}
	return propagation.MapCarrier(m.Otel)
}
