package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"switchboard/accounts"
	"switchboard/apierr"
)

// usersCommand manages dashboard users. `users create` prints the one-time link to set the
// password alone on stdout (so `LINK=$(switchboard users create ...)` works); the user can
// sign in once the password is set.
func usersCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 || args[0] != "create" {
		return usageError{"users needs a subcommand: create --workspace NAME --email E --role R"}
	}
	fs := flag.NewFlagSet("users create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "workspace name")
	email := fs.String("email", "", "the user's email, which signs in")
	role := fs.String("role", "", "owner, admin, member or viewer")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	if *workspace == "" || *email == "" || *role == "" {
		return usageError{"users create needs --workspace NAME --email E --role R"}
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	acc := accounts.New(cfg.App.AccountsConfig(), st, nil)
	u, link, err := acc.CreateUser(ctx, *workspace, *email, *role)
	if e := apierr.As(err); e != nil {
		if e.Code == "email_taken" || e.Code == "workspace_not_found" {
			return errors.New(e.Message) // the command was right; the data says no
		}
		return usageError{e.Message}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "created user %s (role %s) of workspace %s; this link sets the password once, within %.0f hours:\n",
		u.Email, u.Role, u.WorkspaceName, cfg.App.Accounts.SetPasswordTTL.Hours())
	_, err = fmt.Fprintln(stdout, link)
	return err
}
