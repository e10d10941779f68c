package server

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"switchboard/manage"
	"switchboard/mcp"
	"switchboard/openapi"
)

// llmsHead is the hand-written part of /llms.txt: what the service is, how to authenticate,
// errors and rate limits. The routes and tools that follow it are generated.
//
//go:embed static/llms-head.md
var llmsHead []byte

// contract is an OpenAPI document as /llms.txt lists it.
type contract struct {
	title, url string
	yaml       []byte
}

// contracts are the published documents, in the order /llms.txt lists their routes.
var contracts = []contract{
	{"/v1 API", "/openapi/v1.yaml", openapi.V1YAML},
	{"Platform routes (/api)", "/openapi/api.yaml", openapi.APIYAML},
	{"Webchat widget routes (no key)", "/openapi/embed.yaml", openapi.EmbedYAML},
}

// llmsTxt renders /llms.txt at start-up from the OpenAPI documents this binary serves and the
// MCP tools ops registers, so it names every route and tool there is and cannot fall behind
// them (a hand-written list did). Rendering once at start-up needs no generated file and no
// drift check: the inputs are embedded in the binary or wired into it.
func llmsTxt(ops *manage.Service) ([]byte, error) {
	routes, err := llmsRoutes()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(llmsHead, "\n"))
	b.Write(routes)
	writeTools(&b, mcpTools(ops))
	return b.Bytes(), nil
}

// llmsRoutes renders the routes part of /llms.txt once per process: its inputs are the
// embedded documents, so every server of a process gets the same text. Parsing the three
// documents was most of server.New's CPU (18% of the server tests' CPU under -race, which
// start a server per test).
var llmsRoutes = sync.OnceValues(func() ([]byte, error) {
	var b bytes.Buffer
	for _, c := range contracts {
		if err := writeRoutes(&b, c); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
})

// writeRoutes lists a document's operations, one line each: method, path, summary, and the
// permission the caller's role needs.
func writeRoutes(b *bytes.Buffer, c contract) error {
	spec, err := openapi3.NewLoader().LoadFromData(c.yaml)
	if err != nil {
		return fmt.Errorf("%s: %w", c.url, err)
	}
	fmt.Fprintf(b, "\n\n## %s\n\nFrom [%s](%s):\n\n", c.title, c.url, c.url)
	paths := spec.Paths.InMatchingOrder()
	slices.Sort(paths)
	for _, path := range paths {
		ops := spec.Paths.Value(path).Operations()
		methods := make([]string, 0, len(ops))
		for m := range ops {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		for _, m := range methods {
			op := ops[m]
			summary := oneLine(op.Summary)
			if summary == "" {
				summary = op.OperationID
			}
			fmt.Fprintf(b, "- `%s %s`: %s", m, path, summary)
			if p, ok := op.Extensions[permissionExtension].(string); ok && p != publicPermission {
				fmt.Fprintf(b, " (permission `%s`)", p)
			}
			b.WriteString("\n")
		}
	}
	return nil
}

// mcpTools are the tools /mcp serves, as mcp.New registers them.
func mcpTools(ops *manage.Service) []mcpserver.ServerTool {
	if ops == nil {
		ops = &manage.Service{} // a server without operations still lists the agent tools
	}
	tools := mcp.Tools(ops, nil, nil)
	slices.SortFunc(tools, func(a, b mcpserver.ServerTool) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return tools
}

func writeTools(b *bytes.Buffer, tools []mcpserver.ServerTool) {
	b.WriteString("\n## MCP tools\n\nOn `POST /mcp` (streamable HTTP, the same bearer key); each input schema is in tools/list:\n\n")
	for _, t := range tools {
		fmt.Fprintf(b, "- `%s`: %s\n", t.Tool.Name, oneLine(t.Tool.Description))
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
