package llm_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/llm"
	"switchboard/llm/llmtest"
)

// countingConn counts the writes made on a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestVendorRequestIsOneWrite: a vendor call writes its headers and its body in one write on
// the connection (the SDK's own body wrapper made net/http flush the headers on their own),
// and the body still arrives whole, on a reused connection too.
func TestVendorRequestIsOneWrite(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{llm.ProtocolOpenAI, llm.ProtocolAnthropic} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.New(t, protocol)
			var writes, dials atomic.Int64
			base := http.DefaultTransport.(*http.Transport).Clone()
			dial := base.DialContext
			base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{Conn: c, writes: &writes}, nil
			}
			client, err := llm.New(llm.Config{Protocol: protocol, BaseURL: fake.URL, APIKey: testKey,
				HTTPClient: &http.Client{Transport: base}})
			require.NoError(t, err)
			for i := 1; i <= 3; i++ {
				res, err := client.Generate(context.Background(), conversation(), nil)
				require.NoError(t, err)
				require.Equal(t, "reply to: What is the weather in Paris?", res.Text)
				require.EqualValues(t, i, writes.Load(), "writes after %d calls", i)
			}
			require.EqualValues(t, 1, dials.Load(), "the connection is reused")
			reqs := fake.Requests()
			require.Len(t, reqs, 3)
			require.Equal(t, "What is the weather in Paris?", reqs[2].Messages[len(reqs[2].Messages)-1].Text)
		})
	}
}
