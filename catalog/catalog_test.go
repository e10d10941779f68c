package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultListsTheSevenAllowlistedModels(t *testing.T) {
	t.Parallel()
	c := Default()
	require.Equal(t, []string{"alpha-sonnet-4-6", "alpha-haiku-4-5", "alpha-opus-4-7", "beta-5.4", "beta-5.4-mini", "gamma-v4-flash", "gamma-v4-pro"}, c.IDs())
	m, ok := c.Lookup(DefaultModel)
	require.True(t, ok)
	require.Equal(t, Alpha, m.Family)
	_, ok = c.Lookup("gpt-4o")
	require.False(t, ok)
}

func TestCostIsExactAndRoundsUp(t *testing.T) {
	t.Parallel()
	m := Model{InputPerMTok: 3, OutputPerMTok: 15}
	// 1000 input tokens at $3/M = $0.003 = 3,000,000 nano; 500 output at $15/M = 7,500,000 nano.
	require.Equal(t, int64(10_500_000), m.CostNanoUSD(1000, 500))
	cheap := Model{InputPerMTok: 0.0001}
	require.Equal(t, int64(1), cheap.CostNanoUSD(1, 0), "a non-zero call is never free")
	require.Equal(t, int64(0), cheap.CostNanoUSD(0, 0))
}

func TestLoadOverridesUpstreamAndPrices(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "models.yaml")
	require.NoError(t, os.WriteFile(path, []byte("beta-5.4:\n  upstream: real-beta\n  input_per_mtok: 2\n"), 0o600))
	c, err := Load(path)
	require.NoError(t, err)
	m, _ := c.Lookup("beta-5.4")
	require.Equal(t, "real-beta", m.Upstream)
	require.Equal(t, 2.0, m.InputPerMTok)
	require.Equal(t, 10.0, m.OutputPerMTok, "unset fields keep their default")
}

func TestLoadRejectsUnknownIDsAndBadValues(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"unknown id":     "gpt-4o:\n  upstream: x\n",
		"negative price": "beta-5.4:\n  input_per_mtok: -1\n",
		"not yaml map":   "- a\n- b\n",
	} {
		path := filepath.Join(t.TempDir(), "models.yaml")
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		_, err := Load(path)
		require.Error(t, err, name)
	}
}
