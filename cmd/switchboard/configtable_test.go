package main

import (
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestREADMEConfigurationTable: the README's table is the one the code generates.
func TestREADMEConfigurationTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)<!-- config-table:begin[^\n]*-->\n(.*?)<!-- config-table:end -->`).FindSubmatch(readme)
	require.NotNil(t, m, "README.md has no config-table markers")
	require.Equal(t, configTable(), string(m[1]),
		"README.md's configuration table differs from `switchboard config table`: run `make generate` (scripts/readme-config-table.sh)")
}

// TestConfigTableNamesEveryVariable: every variable loadConfig reads has a row.
func TestConfigTableNamesEveryVariable(t *testing.T) {
	t.Parallel()
	documented := map[string]bool{}
	for _, r := range configRows() {
		for _, n := range r.names {
			documented[n] = true
		}
	}
	var mu sync.Mutex
	read := map[string]bool{}
	for _, appEnv := range []string{"production", "development"} {
		_, err := loadConfig(func(name string) string {
			mu.Lock()
			defer mu.Unlock()
			read[name] = true
			if name == "APP_ENV" {
				return appEnv
			}
			return ""
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, read)
	for name := range read {
		require.True(t, documented[name], "%s is read by loadConfig but has no row in configRows (cmd/switchboard/configtable.go); add one and run `make generate`", name)
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"15m0s": "15m", "24h0m0s": "24h", "5s": "5s", "1h30m0s": "1h30m", "90s": "1m30s"} {
		d, err := parseDuration(in)
		require.NoError(t, err)
		require.Equal(t, want, shortDuration(d), in)
	}
	require.True(t, strings.HasPrefix(configTable(), "| variable | default | meaning |\n"))
}

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }
