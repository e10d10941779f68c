package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// AxeVersion is the axe-core release scripts/ensure-axe.sh fetches from npm.
const AxeVersion = "4.11.0"

// AxeCore returns axe-core's script (axe.min.js), from $AXE_CORE_DIR or the cache directory
// scripts/ensure-axe.sh fills. Without it the test is skipped, except under CI.
func AxeCore(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("AXE_CORE_DIR")
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "switchboard", "axe-core-"+AxeVersion)
	}
	b, err := os.ReadFile(filepath.Join(dir, "axe.min.js")) //nolint:gosec // the test environment names the directory
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is missing (%v): run scripts/ensure-axe.sh", err)
		}
		t.Skipf("axe-core is missing (%v): run scripts/ensure-axe.sh", err)
	}
	return string(b)
}

// AxeViolation is one rule axe-core found broken, with the elements that break it.
type AxeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// Axe injects axe-core (script: AxeCore's) into the page of ctx and runs it for WCAG 2.0 and
// 2.1 levels A and AA on the whole document, open shadow roots included, returning the
// violations.
func Axe(ctx context.Context, t testing.TB, script string) []AxeViolation {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](script+";true")); err != nil {
		t.Fatalf("injecting axe-core: %v", err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}, resultTypes: ["violations"]}).then(function (r) { return JSON.stringify(r.violations); })`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("running axe-core: %v", err)
	}
	var out []AxeViolation
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("axe-core's result: %v", err)
	}
	return out
}

// FormatAxe writes violations for a failure message.
func FormatAxe(vs []AxeViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%s (%s): %s\n", v.ID, v.Impact, v.Help)
		for _, n := range v.Nodes {
			fmt.Fprintf(&b, "  %v: %s\n", n.Target, n.Summary)
		}
	}
	return b.String()
}
