// Command widgetpaint measures the webchat widget's first paint on a host page (issue 49,
// item 4), in headless Chromium's performance timeline: `bench/run.sh agents` runs it.
//
//	widgetpaint -server URL -deployment ID [-loads 20]
//
// It serves a host page of its own (another origin than the server, as a customer's site
// is) whose only content is the embed line, <script src="SERVER/embed/ID.js" async>, and
// loads it -loads times, each in a fresh tab. The loader marks "switchboard-webchat:loader"
// when it starts running and "switchboard-webchat:launcher" once the launcher is in the page
// (webchat/static/loader.js); the page has nothing else to paint, so its first contentful
// paint (the paint timing entry) is the launcher's. Reported: the time from the loader's
// mark to that paint, p50 and max over the loads, and the script's own run time to its
// second mark. The first load fetches the loader over the network; the later ones may use
// Chromium's cache, as a visitor's second page does.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	server := flag.String("server", "", "the server's base URL")
	deployment := flag.String("deployment", "", "a webchat deployment's id")
	loads := flag.Int("loads", 20, "page loads")
	flag.Parse()
	if *server == "" || *deployment == "" {
		fmt.Fprintln(os.Stderr, "widgetpaint: -server and -deployment are required")
		os.Exit(2)
	}
	if err := run(strings.TrimSuffix(*server, "/"), *deployment, *loads); err != nil {
		fmt.Fprintln(os.Stderr, "widgetpaint:", err)
		os.Exit(1)
	}
}

func run(server, deployment string, loads int) error {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		return fmt.Errorf("chromium is missing: run scripts/ensure-chromium.sh")
	}
	page := `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host page</title></head><body>` +
		`<script src="` + server + `/embed/` + deployment + `.js" async></script></body></html>`
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	host := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	})}
	go func() { _ = host.Serve(ln) }()
	defer host.Close()
	url := "http://" + ln.Addr().String() + "/"

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	browserCtx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(browserCtx, chromedp.Navigate("about:blank")); err != nil {
		return fmt.Errorf("starting chromium: %w", err)
	}
	var paint, script []float64
	for i := range loads {
		tab, cancelTab := chromedp.NewContext(browserCtx)
		ctx, cancelTimeout := context.WithTimeout(tab, 30*time.Second)
		p, s, err := load(ctx, url)
		cancelTimeout()
		cancelTab()
		if err != nil {
			return fmt.Errorf("load %d: %w", i+1, err)
		}
		paint, script = append(paint, p), append(script, s)
	}
	first := paint[0]
	slices.Sort(paint)
	slices.Sort(script)
	fmt.Printf("widget: %d loads of a host page with the embed line; loader start to the launcher's first paint: p50 %.1f ms, max %.1f ms (first load %.1f ms); the loader's own run to the launcher in the page: p50 %.2f ms (target: first paint under 100 ms)\n",
		len(paint), paint[len(paint)/2], paint[len(paint)-1], first, script[len(script)/2])
	return nil
}

// load opens the host page and waits for the loader's marks and the first contentful paint;
// it returns the time from the loader's start to that paint and to the launcher's mark, in ms.
func load(ctx context.Context, url string) (paint, script float64, err error) {
	const read = `(() => {
  const m = performance.getEntriesByName("switchboard-webchat:loader")[0];
  const l = performance.getEntriesByName("switchboard-webchat:launcher")[0];
  const p = performance.getEntriesByName("first-contentful-paint")[0];
  return m && l && p ? [p.startTime - m.startTime, l.startTime - m.startTime] : null;
})()`
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return 0, 0, err
	}
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](read))
		if err != nil {
			return 0, 0, err
		}
		if len(got) == 2 {
			if got[0] < 0 {
				return 0, 0, fmt.Errorf("the page painted %.1f ms before the loader ran: something else on it is contentful", -got[0])
			}
			return got[0], got[1], nil
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("no first contentful paint and loader marks within the timeout")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
