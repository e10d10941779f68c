package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"switchboard/accounts"
	"switchboard/money"
	"switchboard/store"
)

// TestOverviewMoneyInABrowser: amounts read as money (whole cents) with the exact amount as
// the tooltip, the three cards line up, and a workspace without spend is told so instead of
// seeing a scale over nothing. Screenshots: overview (with spend), overview-no-spend.
func TestOverviewMoneyInABrowser(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	// The seeded spend is whole tenths of a cent; one turn priced to the nano-dollar more.
	_, _, err := s.store.Settle(context.Background(), s.workspace.ID, &store.Charge{AmountNanoUSD: 1_234_567, Category: "turn", Model: "beta-5.4-mini"},
		func(int64) []store.NewEvent { return nil })
	require.NoError(t, err)
	ctx := browser(t)
	s.signIn(ctx, t, "admin@acme.example")
	s.screenshot(ctx, t, "/dashboard/", "overview")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(s.url+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(`#balance`))))

	for _, sel := range []string{"#balance .money", "#spend .money", "main table td.num .money"} {
		shown, exact := moneyAt(ctx, t, sel)
		require.Regexp(t, `^\$\d+\.\d\d$`, shown, sel)
		nano, err := money.ParseUSD(strings.TrimPrefix(exact, "$"))
		require.NoError(t, err, "%s: the tooltip %q is an exact amount", sel, exact)
		require.Equal(t, "$"+money.FormatCents(nano), shown, "%s: the cents are the exact amount rounded", sel)
	}
	_, exact := moneyAt(ctx, t, "#spend .money")
	require.Regexp(t, `^\$\d+\.\d+234567$`, exact, "fractions of a cent are kept in the tooltip")
	require.Contains(t, text(ctx, t, "main figure.chart"), "highest day: $0.")
	cardsAligned(ctx, t)

	// A workspace that has spent nothing yet.
	empty, err := s.store.CreateWorkspace(context.Background(), "quiet", 5_000_000_000)
	require.NoError(t, err)
	u, err := s.store.CreateUser(context.Background(), empty.ID, "owner@quiet.example", "owner", []byte(strings.Repeat("q", 32)), time.Now().Add(time.Hour))
	require.NoError(t, err)
	hash, err := accounts.HashPassword(password)
	require.NoError(t, err)
	_, err = s.store.SetPassword(context.Background(), empty.ID, u.ID, hash)
	require.NoError(t, err)
	quiet := browser(t)
	s.signIn(quiet, t, "owner@quiet.example")
	require.Equal(t, "$5.00", strings.TrimSpace(text(quiet, t, "#balance")))
	require.Equal(t, "$0.00", strings.TrimSpace(text(quiet, t, "#spend")))
	charts := text(quiet, t, "main")
	require.Contains(t, charts, "No spend in the last 30 days.")
	require.Contains(t, charts, "No turns in the last 30 days.")
	require.NotContains(t, charts, "highest day", "no scale over nothing")
	cardsAligned(quiet, t)
	s.screenshot(quiet, t, "/dashboard/", "overview-no-spend")
}

// moneyAt is the amount shown at sel and its tooltip.
func moneyAt(ctx context.Context, t *testing.T, sel string) (shown, title string) {
	t.Helper()
	shown = strings.TrimSpace(text(ctx, t, sel))
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(`+"`"+sel+"`"+`).title`))
	require.NoError(t, err)
	return shown, title
}

// cardsAligned: at a desktop's width the overview's three cards share one top and one height.
func cardsAligned(ctx context.Context, t *testing.T) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)))
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[][2]float64](`[...document.querySelectorAll('.cards > .card')].map(c => { const r = c.getBoundingClientRect(); return [r.top, r.height]; })`))
	require.NoError(t, err)
	require.Len(t, boxes, 3)
	for _, b := range boxes[1:] {
		require.Equal(t, boxes[0], b, "cards at %v", boxes)
	}
}
