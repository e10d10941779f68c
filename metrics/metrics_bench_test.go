package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"switchboard/metrics"
)

// BenchmarkRequestOverhead is what metrics add to one request: the middleware, and the turn
// and vendor-call counts a turn adds (docs/benchmarks.md compares it with a turn's cost).
func BenchmarkRequestOverhead(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			e := echo.New()
			var m *metrics.Metrics
			if on {
				m = metrics.New()
				e.Use(m.Echo())
			}
			e.POST("/v1/chat/completions", func(c echo.Context) error {
				m.VendorCall("alpha", "ok", time.Millisecond, 0)
				m.Turn("chat.completions", "alpha-sonnet-4-6", "completed", time.Millisecond, 10, 20, 300)
				return c.NoContent(http.StatusOK)
			})
			req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
