package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"switchboard/secrets"
	"switchboard/store/internal/dbsqlc"
)

// ErrNoSecretsKey is returned when a secret must be sealed or opened and the store has no
// keyring (SECRETS_KEY is not set).
var ErrNoSecretsKey = errors.New("SECRETS_KEY is not set: webhook signing secrets cannot be sealed or opened without it")

// webhookSecretBinding ties a sealed secret to its endpoint: copied into another row, it
// does not open.
func webhookSecretBinding(shortID string) string { return "webhook_endpoints.secret/" + shortID }

func (q *queries) sealWebhookSecret(shortID, secret string) (secrets.Sealed, error) {
	if q.secrets == nil {
		return secrets.Sealed{}, ErrNoSecretsKey
	}
	return q.secrets.Seal([]byte(secret), webhookSecretBinding(shortID))
}

// openWebhookSecret returns an endpoint's secret: opened, or as is when an endpoint created
// before secrets were sealed has not been sealed yet.
func (q *queries) openWebhookSecret(shortID string, plaintext *string, ciphertext []byte, keyID *string) (string, error) {
	if plaintext != nil {
		return *plaintext, nil
	}
	if q.secrets == nil {
		return "", ErrNoSecretsKey
	}
	if keyID == nil {
		return "", fmt.Errorf("webhook endpoint %s: sealed secret without a key id", shortID)
	}
	plain, err := q.secrets.Open(secrets.Sealed{Ciphertext: ciphertext, KeyID: *keyID}, webhookSecretBinding(shortID))
	if err != nil {
		return "", fmt.Errorf("webhook endpoint %s: %w (is SECRETS_KEY, or SECRETS_KEY_PREVIOUS during a rotation, the key it was sealed with?)", shortID, err)
	}
	return string(plain), nil
}

// SecretKeyCounts counts the webhook endpoints per key id of their secret; the key "" counts
// the secrets still in plaintext.
func (q *queries) SecretKeyCounts(ctx context.Context) (map[string]int, error) {
	rows, err := q.sql.WebhookSecretKeys(ctx, q.db)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.KeyID] = r.Endpoints
	}
	return out, nil
}

// SealReport says what SealSecrets did.
type SealReport struct {
	Sealed    int            // plaintext secrets sealed with the current key
	Rotated   int            // secrets sealed with a previous key, sealed again with the current one
	Remaining map[string]int // endpoints per key id whose secret no configured key opens
}

// sealBatch bounds the rows one transaction of SealSecrets locks.
const sealBatch = 200

// SealSecrets seals every webhook secret still in plaintext with the current key and, when
// rotate is set, seals again with it every secret sealed with a previous key of the
// keyring. Each batch commits on its own, so it can run while the server serves; a row is
// locked while it is resealed. Secrets under a key the keyring does not hold are left as
// they are and counted in Remaining.
func (s *Store) SealSecrets(ctx context.Context, rotate bool) (SealReport, error) {
	report := SealReport{Remaining: map[string]int{}}
	if s.secrets == nil {
		return report, ErrNoSecretsKey
	}
	var old []string
	if rotate {
		old = s.secrets.PreviousIDs()
	}
	for {
		n := 0
		err := s.InTx(ctx, func(t *Tx) error {
			rows, err := t.sql.WebhookSecretsToSeal(ctx, t.db, dbsqlc.WebhookSecretsToSealParams{KeyIds: old, Max: sealBatch})
			if err != nil {
				return err
			}
			n = len(rows)
			for _, r := range rows {
				plain, err := t.openWebhookSecret(r.ShortID, r.Secret, r.SecretCiphertext, r.SecretKeyID)
				if err != nil {
					return err
				}
				sealed, err := t.sealWebhookSecret(r.ShortID, plain)
				if err != nil {
					return err
				}
				if err := t.sql.SealWebhookSecret(ctx, t.db, dbsqlc.SealWebhookSecretParams{ID: r.ID,
					SecretCiphertext: sealed.Ciphertext, SecretKeyID: &sealed.KeyID}); err != nil {
					return err
				}
				if r.Secret != nil {
					report.Sealed++
				} else {
					report.Rotated++
				}
			}
			return nil
		})
		if err != nil {
			return report, err
		}
		if n < sealBatch {
			break
		}
	}
	if rotate {
		n, err := s.resealChannelSecrets(ctx, old)
		report.Rotated += n
		if err != nil {
			return report, err
		}
	}
	counts, err := s.SecretKeyCounts(ctx)
	if err != nil {
		return report, err
	}
	for id, n := range counts {
		if id != "" && !s.secrets.Knows(id) {
			report.Remaining[id] = n
		}
	}
	return report, nil
}

// ChannelSecretsBinding ties a channel's sealed credentials to the channel: copied into
// another row, they do not open.
func ChannelSecretsBinding(id uuid.UUID) string { return "channels.secrets/" + id.String() }

// resealChannelSecrets seals again with the current key the channels' credentials sealed
// with one of the old keys, a batch per transaction.
func (s *Store) resealChannelSecrets(ctx context.Context, old []string) (int, error) {
	total := 0
	for len(old) > 0 {
		n := 0
		err := s.InTx(ctx, func(t *Tx) error {
			rows, err := t.sql.ChannelSecretsToReseal(ctx, t.db, dbsqlc.ChannelSecretsToResealParams{KeyIds: old, Max: sealBatch})
			if err != nil {
				return err
			}
			n = len(rows)
			for _, r := range rows {
				binding := ChannelSecretsBinding(r.ID)
				plain, err := s.secrets.Open(secrets.Sealed{Ciphertext: r.Secrets, KeyID: *r.SecretsKeyID}, binding)
				if err != nil {
					return fmt.Errorf("channel %s: %w", r.ID, err)
				}
				sealed, err := s.secrets.Seal(plain, binding)
				if err != nil {
					return err
				}
				if err := t.sql.ResealChannelSecrets(ctx, t.db, dbsqlc.ResealChannelSecretsParams{ID: r.ID, Secrets: sealed.Ciphertext, SecretsKeyID: &sealed.KeyID}); err != nil {
					return err
				}
			}
			return nil
		})
		total += n
		if err != nil || n < sealBatch {
			return total, err
		}
	}
	return total, nil
}
