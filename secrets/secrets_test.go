package secrets_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/secrets"
)

func newKey(t *testing.T) (secrets.Key, string) {
	t.Helper()
	k, encoded, err := secrets.GenerateKey()
	require.NoError(t, err)
	return k, encoded
}

func TestSealOpens(t *testing.T) {
	t.Parallel()
	k, encoded := newKey(t)
	again, err := secrets.ParseKey("SECRETS_KEY", encoded)
	require.NoError(t, err)
	require.Equal(t, k.ID(), again.ID(), "the id is a function of the key")

	ring := secrets.NewKeyring(k)
	plain := []byte("whsec_c2VjcmV0")
	s1, err := ring.Seal(plain, "whe-1")
	require.NoError(t, err)
	s2, err := ring.Seal(plain, "whe-1")
	require.NoError(t, err)
	require.Equal(t, k.ID(), s1.KeyID)
	require.False(t, bytes.Contains(s1.Ciphertext, plain))
	require.NotEqual(t, s1.Ciphertext, s2.Ciphertext, "a random nonce per secret")

	got, err := secrets.NewKeyring(again).Open(s1, "whe-1")
	require.NoError(t, err)
	require.Equal(t, plain, got)
}

func TestOpenRefusesWhatItCannotVouchFor(t *testing.T) {
	t.Parallel()
	k, _ := newKey(t)
	other, _ := newKey(t)
	ring := secrets.NewKeyring(k)
	s, err := ring.Seal([]byte("whsec_x"), "whe-1")
	require.NoError(t, err)

	_, err = ring.Open(s, "whe-2")
	require.ErrorIs(t, err, secrets.ErrTampered, "sealed for another record")

	altered := secrets.Sealed{Ciphertext: bytes.Clone(s.Ciphertext), KeyID: s.KeyID}
	altered.Ciphertext[len(altered.Ciphertext)-1] ^= 1
	_, err = ring.Open(altered, "whe-1")
	require.ErrorIs(t, err, secrets.ErrTampered)

	_, err = ring.Open(secrets.Sealed{Ciphertext: s.Ciphertext[:5], KeyID: s.KeyID}, "whe-1")
	require.ErrorIs(t, err, secrets.ErrTampered, "too short")

	_, err = secrets.NewKeyring(other).Open(s, "whe-1")
	require.ErrorIs(t, err, secrets.ErrUnknownKey, "a wrong key fails clearly")
	require.Contains(t, err.Error(), k.ID())
}

func TestPreviousKeysOpenButDoNotSeal(t *testing.T) {
	t.Parallel()
	old, _ := newKey(t)
	current, _ := newKey(t)
	s, err := secrets.NewKeyring(old).Seal([]byte("whsec_x"), "whe-1")
	require.NoError(t, err)
	ring := secrets.NewKeyring(current, old)
	got, err := ring.Open(s, "whe-1")
	require.NoError(t, err)
	require.Equal(t, "whsec_x", string(got))
	resealed, err := ring.Seal(got, "whe-1")
	require.NoError(t, err)
	require.Equal(t, current.ID(), resealed.KeyID)
	require.True(t, ring.Knows(old.ID()))
	require.Equal(t, []string{old.ID()}, ring.PreviousIDs())
}

func TestParseKeyNamesTheVariable(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "not base64!", "c2hvcnQ=", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		_, err := secrets.ParseKey("SECRETS_KEY", bad)
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "SECRETS_KEY")
	}
	_, err := secrets.ParseKey("SECRETS_KEY", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") // 32 zero bytes, unpadded
	require.NoError(t, err)
}

func TestDerive(t *testing.T) {
	k1, _, err := secrets.GenerateKey()
	require.NoError(t, err)
	k2, _, err := secrets.GenerateKey()
	require.NoError(t, err)
	a, err := secrets.NewKeyring(k1).Derive("label one")
	require.NoError(t, err)
	again, err := secrets.NewKeyring(k1).Derive("label one")
	require.NoError(t, err)
	require.Equal(t, a, again, "the same key and label give the same key (restarts, replicas)")
	require.Len(t, a[0], secrets.KeySize)
	other, err := secrets.NewKeyring(k1).Derive("label two")
	require.NoError(t, err)
	require.NotEqual(t, a[0], other[0], "each label its own key")
	rotated, err := secrets.NewKeyring(k2, k1).Derive("label one")
	require.NoError(t, err)
	require.Len(t, rotated, 2)
	require.NotEqual(t, a[0], rotated[0])
	require.Equal(t, a[0], rotated[1], "the previous key's derived key comes second")
}
