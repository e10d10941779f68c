package webchat

import (
	"bytes"
	"embed"
	"encoding/json"

	"github.com/google/uuid"
)

//go:embed static/loader.js static/widget.js static/widget.css
var static embed.FS

// Widget and WidgetCSS are the widget's script and style sheet, fetched by the loader only
// when a visitor opens the chat (served at /embed/static/widget.js and widget.css).
var (
	Widget    = mustRead("static/widget.js")
	WidgetCSS = mustRead("static/widget.css")
	loader    = mustRead("static/loader.js")
)

func mustRead(name string) []byte {
	b, err := static.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return b
}

// Loader is the script of the embed line for one deployment: a launcher button that fetches
// the widget from base on first open.
func Loader(base string, deployment uuid.UUID) []byte {
	b, _ := json.Marshal(base)
	d, _ := json.Marshal(deployment.String())
	out := bytes.Replace(loader, []byte("__BASE__"), b, 1)
	return bytes.Replace(out, []byte("__DEPLOYMENT__"), d, 1)
}
