package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"

	"switchboard/apikey"
	"switchboard/money"
	"switchboard/store"
)

func workspacesCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) < 2 {
		return usageError{"workspaces needs a subcommand and a NAME"}
	}
	sub, name := args[0], args[1]
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	var w store.Workspace
	switch sub {
	case "create":
		w, err = st.CreateWorkspace(ctx, name, cfg.StartingCreditNano)
		if errors.Is(err, store.ErrExists) {
			return fmt.Errorf("workspace %q already exists", name)
		}
	case "credit":
		fs := flag.NewFlagSet("workspaces credit", flag.ContinueOnError)
		usd := fs.String("usd", "", "amount in dollars; negative removes credit")
		if err := fs.Parse(args[2:]); err != nil {
			return usageError{err.Error()}
		}
		nano, perr := money.ParseUSD(*usd)
		if perr != nil {
			return usageError{"--usd: " + perr.Error()}
		}
		w, err = st.AddCredit(ctx, name, nano)
	case "cap":
		fs := flag.NewFlagSet("workspaces cap", flag.ContinueOnError)
		usd := fs.String("usd", "", "monthly spend cap in dollars (positive)")
		clearCap := fs.Bool("clear", false, "remove the cap")
		if err := fs.Parse(args[2:]); err != nil {
			return usageError{err.Error()}
		}
		var capNano *int64
		switch {
		case *clearCap && *usd != "":
			return usageError{"give either --usd or --clear, not both"}
		case *clearCap:
		case *usd == "":
			return usageError{"workspaces cap needs --usd AMOUNT or --clear"}
		default:
			nano, perr := money.ParseUSD(*usd)
			if perr != nil {
				return usageError{"--usd: " + perr.Error()}
			}
			if nano <= 0 {
				return usageError{"--usd: the cap must be above zero (to stop all work, use `workspaces suspend`; to remove the cap, --clear)"}
			}
			capNano = &nano
		}
		w, err = st.SetMonthlyCap(ctx, name, capNano)
	case "suspend":
		w, err = st.SuspendWorkspace(ctx, name) // and pauses its campaigns
	case "resume":
		w, err = st.SetWorkspaceStatus(ctx, name, store.WorkspaceActive)
	default:
		return usageError{fmt.Sprintf("unknown workspaces subcommand %q", sub)}
	}
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no workspace named %q", name)
	}
	if err != nil {
		return err
	}
	capUSD := "none"
	if w.MonthlyCapNanoUSD != nil {
		capUSD = money.FormatUSD(*w.MonthlyCapNanoUSD)
	}
	_, err = fmt.Fprintf(stdout, "workspace %s  id=%s  status=%s  balance_usd=%s  monthly_cap_usd=%s  month_spend_usd=%s\n", w.Name, w.ID, w.Status,
		money.FormatUSD(w.BalanceNanoUSD), capUSD, money.FormatUSD(w.MonthSpendNanoUSD))
	return err
}

func keysCommand(ctx context.Context, cfg config, args []string, stdout, stderr io.Writer) error {
	if len(args) < 1 {
		return usageError{"keys needs a subcommand"}
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	workspace := fs.String("workspace", "", "workspace name")
	role := fs.String("role", "member", "owner, admin, member or viewer")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err.Error()}
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "create":
		return createKey(ctx, st, *workspace, *role, stdout, stderr)
	case "list":
		return listKeys(ctx, st, *workspace, stdout)
	case "revoke":
		if fs.NArg() != 1 {
			return usageError{"keys revoke needs the key ID"}
		}
		id, err := uuid.Parse(fs.Arg(0))
		if err != nil {
			return usageError{"key ID must be a UUID (see `keys list`)"}
		}
		k, err := st.RevokeKey(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no key with id %s", id)
		}
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "revoked %s (%s)\n", k.ID, k.DisplayPrefix)
		return err
	}
	return usageError{fmt.Sprintf("unknown keys subcommand %q", args[0])}
}

func workspaceNamed(ctx context.Context, st *store.Store, name string) (store.Workspace, error) {
	if name == "" {
		return store.Workspace{}, usageError{"--workspace NAME is required"}
	}
	w, err := st.WorkspaceByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return w, fmt.Errorf("no workspace named %q (create it with `switchboard workspaces create %s`)", name, name)
	}
	return w, err
}

// createKey prints the key alone on stdout, so `KEY=$(switchboard keys create ...)` works;
// it is shown this once and only its hash is stored.
func createKey(ctx context.Context, st *store.Store, workspace, role string, stdout, stderr io.Writer) error {
	if !apikey.ValidRole(role) {
		return usageError{fmt.Sprintf("--role must be one of %s", strings.Join(apikey.Roles, ", "))}
	}
	w, err := workspaceNamed(ctx, st, workspace)
	if err != nil {
		return err
	}
	key, sum, display := apikey.New()
	k, err := st.CreateKey(ctx, w.ID, role, sum, display)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "created key %s (role %s) for workspace %s; it is shown only now:\n", k.ID, role, w.Name)
	_, err = fmt.Fprintln(stdout, key)
	return err
}

func listKeys(ctx context.Context, st *store.Store, workspace string, stdout io.Writer) error {
	w, err := workspaceNamed(ctx, st, workspace)
	if err != nil {
		return err
	}
	keys, err := st.ListKeys(ctx, w.ID)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tROLE\tCREATED\tSTATUS")
	for _, k := range keys {
		status := "active"
		if k.RevokedAt != nil {
			status = "revoked " + k.RevokedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.DisplayPrefix, k.Role, k.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), status)
	}
	return tw.Flush()
}
