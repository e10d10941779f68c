package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
)

// secretsCommand is `secrets rotate`: every webhook secret sealed with a key of
// SECRETS_KEY_PREVIOUS (or still in plaintext, from before secrets were sealed) is sealed
// again with SECRETS_KEY. Run it after every replica has the new SECRETS_KEY and the old
// key as SECRETS_KEY_PREVIOUS; then SECRETS_KEY_PREVIOUS can go. It is safe to run while
// the server serves, and again.
func secretsCommand(ctx context.Context, cfg config, args []string, stdout io.Writer) error {
	if len(args) != 1 || args[0] != "rotate" {
		return usageError{"secrets needs the subcommand rotate"}
	}
	if cfg.Secrets == nil || cfg.ThrowawaySecretsKey != "" {
		return fmt.Errorf("SECRETS_KEY is not set: set it to the new key, and SECRETS_KEY_PREVIOUS to the old one")
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	report, err := st.SealSecrets(ctx, true)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "sealed %d plaintext secret(s) and resealed %d secret(s) with key id %s\n",
		report.Sealed, report.Rotated, cfg.Secrets.CurrentID()); err != nil {
		return err
	}
	if len(report.Remaining) > 0 {
		var ids []string
		for id, n := range report.Remaining {
			ids = append(ids, fmt.Sprintf("%s (%d)", id, n))
		}
		slices.Sort(ids)
		return fmt.Errorf("secrets sealed with key id(s) %s were left as they are: neither SECRETS_KEY nor SECRETS_KEY_PREVIOUS is that key",
			strings.Join(ids, ", "))
	}
	return nil
}
