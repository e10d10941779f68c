package campaigns

import (
	"testing"

	"github.com/stretchr/testify/require"

	"switchboard/apierr"
)

func TestTemplateParametersFromTheContact(t *testing.T) {
	t.Parallel()
	tm := Template{Name: "spring_sale", Language: "en_US", Parameters: []string{"{{contact.first_name|there}}", "{{ contact.name }} ({{contact.phone}})", "20%"}}
	require.NoError(t, tm.check())
	params, ok := tm.Render("Bob Stone", "+14155550301")
	require.True(t, ok)
	require.Equal(t, []string{"Bob", "Bob Stone (+14155550301)", "20%"}, params)
	params, ok = tm.Render("", "+14155550301")
	require.True(t, ok)
	require.Equal(t, "there", params[0], "the fallback")

	// A variable with nothing in it and no fallback: WhatsApp would refuse the message.
	bare := Template{Name: "hello", Language: "de", Parameters: []string{"{{contact.name}}"}}
	require.NoError(t, bare.check())
	_, ok = bare.Render("  ", "+14155550301")
	require.False(t, ok)

	for param, bad := range map[string]Template{
		"template.name":          {Name: "Spring Sale", Language: "en_US"},
		"template.language":      {Name: "spring_sale", Language: "english"},
		"template.parameters[1]": {Name: "spring_sale", Language: "en", Parameters: []string{"ok", "{{contact.email}}"}},
		"template.parameters[0]": {Name: "spring_sale", Language: "en", Parameters: []string{" "}},
	} {
		err := bad.check()
		require.Error(t, err, param)
		require.Equal(t, param, apierr.As(err).Param)
	}
}
