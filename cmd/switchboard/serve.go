package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"switchboard/apikey"
	"switchboard/app"
	"switchboard/catalog"
	"switchboard/httpdeadline"
	"switchboard/store"
)

// drainTimeout bounds how long a SIGTERM waits for requests in flight.
const drainTimeout = 30 * time.Second

func openStore(ctx context.Context, cfg config) (*store.Store, error) {
	if err := cfg.requireDatabase(); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	return st.WithSecrets(cfg.Secrets), nil
}

func migrate(ctx context.Context, cfg config, stdout io.Writer) error {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	applied, err := store.Migrate(ctx, st.Pool())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "applied %d migration(s) %v\n", len(applied), applied)
	return err
}

func serve(ctx context.Context, cfg config, log *slog.Logger) error {
	if cfg.DefaultGOGC {
		debug.SetGCPercent(serveGOGC)
	}
	cat, err := catalog.Load(cfg.ModelsFile)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		return fmt.Errorf("database unreachable: %w", err)
	}
	if applied, err := store.Migrate(ctx, st.Pool()); err != nil {
		return err
	} else if len(applied) > 0 {
		log.Info("migrated", slog.Any("versions", applied))
	}
	if err := bootstrapKey(ctx, cfg, st); err != nil {
		return err
	}

	a, err := app.New(cfg.App, st, cat, log)
	if err != nil {
		return err
	}
	// Bind before starting background work: a port in use is a clean failure at start.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return listenError("ADDR", cfg.Addr, err)
	}
	side := sidePorts(cfg, a.Metrics)
	if err := listenSide(side); err != nil {
		ln.Close()
		return err
	}
	defer closeSide(side)
	if err := a.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	// Header, body, write and idle time-outs; event streams keep their own rules
	// (httpdeadline's package comment has the values and why).
	httpServer := httpdeadline.NewServer(cfg.Addr, a.Handler(), cfg.HTTP)
	errc := make(chan error, 2+len(side))
	go func() { errc <- httpServer.Serve(ln) }()
	log.Info("serving", slog.String("addr", cfg.Addr), slog.String("app_env", cfg.AppEnv))
	if cfg.MCPAddr != "" {
		mcpServer := httpdeadline.NewServer(cfg.MCPAddr, a.Server.MCPHandler(), cfg.HTTP)
		go func() {
			err := mcpServer.ListenAndServe()
			if !errors.Is(err, http.ErrServerClosed) {
				err = listenError("MCP_ADDR", cfg.MCPAddr, err)
			}
			errc <- err
		}()
		defer mcpServer.Close()
		log.Info("serving MCP", slog.String("addr", cfg.MCPAddr))
	}

	serveSide(side, errc, log)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Not ready first, still serving: load balancers polling /ready take this replica out
	// before it stops accepting. A second signal (or an error) cuts the delay short.
	a.Server.BeginDrain()
	log.Info("not ready; still serving until the drain delay ends", slog.Duration("drain_delay", cfg.App.DrainDelay))
	select {
	case <-time.After(cfg.App.DrainDelay):
	case <-secondSignal():
	case err := <-errc:
		return err
	}
	log.Info("draining", slog.Duration("timeout", drainTimeout))
	a.Hub.BeginShutdown()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := a.Stop(shutdownCtx); err != nil {
		return fmt.Errorf("stop background work: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// secondSignal is closed by a SIGINT or SIGTERM that comes after the first: an operator who
// asks twice does not wait for the drain delay.
func secondSignal() <-chan os.Signal {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	return c
}

// bootstrapKey makes BOOTSTRAP_API_KEY a key of workspace `default`, at every start.
func bootstrapKey(ctx context.Context, cfg config, st *store.Store) error {
	if cfg.BootstrapAPIKey == "" {
		return nil
	}
	sum, err := apikey.Hash(cfg.BootstrapAPIKey)
	if err != nil {
		return fmt.Errorf("BOOTSTRAP_API_KEY must start with %s and have at least 32 more characters of [A-Za-z0-9_-]", apikey.Prefix)
	}
	return st.EnsureBootstrapKey(ctx, "default", cfg.StartingCreditNano, sum, apikey.Display(cfg.BootstrapAPIKey))
}

// listenError names the variable that chose a listen address that cannot be used, and the
// way out: the bare `bind: address already in use` does not say where the port came from.
func listenError(variable, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: %w: another process uses that port; stop it, or set %s to a free address (e.g. %s=:8081)", addr, err, variable, variable)
	}
	return fmt.Errorf("listen on %s (%s): %w", addr, variable, err)
}
