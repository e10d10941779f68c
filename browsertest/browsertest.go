// Package browsertest starts headless Chromium for the browser tests of the pages and the
// webchat widget: Debian's `chromium`, which `make test` installs through
// scripts/ensure-chromium.sh.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is the browser's path. Without one the test is skipped, except under CI, where a
// missing browser is a failure.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is missing: run scripts/ensure-chromium.sh")
	}
	t.Skip("chromium is missing: run scripts/ensure-chromium.sh")
	return ""
}

// Start starts a headless Chromium of its own (a fresh profile, its own cookies and storage)
// for the test, with a window of the size given (0 keeps Chromium's), and returns a context
// for its actions, bounded to five minutes (a hung page, not a slow machine: the dashboard's
// browser tests run side by side, and one took 70 s of the old two-minute bound with four
// Chromiums on a busy two-core machine). The browser is stopped when the test ends.
func Start(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	if width > 0 && height > 0 {
		opts = append(opts, chromedp.WindowSize(width, height))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	// The first action starts the browser, which lives as long as that action's context: no
	// time limit on it, only on the actions after it.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	bounded, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return bounded
}
