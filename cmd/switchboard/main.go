// Command switchboard is the whole platform in one binary: `serve` runs the HTTP surfaces,
// the other subcommands are operator tools over the same database.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"switchboard/logwriter"
)

const usage = `usage: switchboard COMMAND

  serve                                     run the server (migrates first)
  migrate                                   apply database migrations
  workspaces create NAME                    create a workspace with the starting credit
  workspaces credit NAME --usd AMOUNT       add (or with a negative amount, remove) credit
  workspaces cap NAME --usd AMOUNT|--clear  set or remove the monthly spend cap (UTC calendar month)
  workspaces suspend NAME                   stop all work of a workspace
  workspaces resume NAME                    let a suspended workspace work again
  keys create --workspace NAME [--role R]   create a key (owner, admin, member, viewer; default member) and print it
  keys list --workspace NAME                list a workspace's keys
  keys revoke ID                            revoke a key
  users create --workspace NAME --email E --role R
                                            create a dashboard user and print a one-time link to set its password
  secrets rotate                            seal every webhook secret with SECRETS_KEY (the old key in SECRETS_KEY_PREVIOUS)
  webhooks listen [--server URL] [--key K] [--listen ADDR] [--events T,T] [--show-secret]
                                            print the workspace's events as signed webhooks to a local port
                                            (a temporary endpoint, removed on exit; its signing secret is
                                            printed masked, in full with --show-secret)
  config table                              print the README's configuration table

Configuration comes from the environment; see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(os.Stderr, "switchboard: %v\n\n%s", err, usage)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "switchboard: %v\n", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{"no command given"}
	}
	if args[0] == "config" { // documents the defaults; reads no environment
		return configCommand(args[1:], stdout)
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	switch args[0] {
	case "serve":
		// Under load every request logs a line: they are written off the request path,
		// together (logwriter), and all of them before run returns.
		lines := logwriter.New(stderr)
		defer lines.Close()
		log := slog.New(slog.NewJSONHandler(lines, nil))
		if cfg.ThrowawaySecretsKey != "" {
			log.Warn("SECRETS_KEY is not set: webhook secrets of this development run are sealed with a throwaway key; "+
				"set SECRETS_KEY to it to keep them readable after a restart",
				slog.String("SECRETS_KEY", cfg.ThrowawaySecretsKey))
		}
		return serve(ctx, cfg, log)
	case "migrate":
		return migrate(ctx, cfg, stdout)
	case "workspaces":
		return workspacesCommand(ctx, cfg, args[1:], stdout)
	case "keys":
		return keysCommand(ctx, cfg, args[1:], stdout, stderr)
	case "users":
		return usersCommand(ctx, cfg, args[1:], stdout, stderr)
	case "secrets":
		return secretsCommand(ctx, cfg, args[1:], stdout)
	case "webhooks":
		return webhooksCommand(ctx, cfg, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		_, err := io.WriteString(stdout, usage)
		return err
	}
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}
