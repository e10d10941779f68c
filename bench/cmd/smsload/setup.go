package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// channel is the SMS channel of the run, connected and with the agent deployed on it.
type channel struct {
	ID, AgentID, InboundURL string
	Path                    string // InboundURL without the public base: what both replicas serve
}

// blueprint is the agent of the run: a text agent on a model that the mock answers after
// the delay with an echo of the message (MODELS_FILE, bench/run.sh sms).
const blueprint = `agent:
  name: SMS bench
  language: en
  persona:
    display_name: Bench
    tone: friendly
    greeting: Hi!
  llm:
    provider: beta
    model: %s
    temperature: 0
    max_tokens: 256
    system_prompt: You answer text messages in one short sentence.
`

// setup creates the agent (POST /api/agents), connects the SMS channel of number (POST
// /api/channels: the carrier must hold it) and deploys the agent on it with deploy_agent over
// MCP (mcp-go's client), all on replica a, whose address is PUBLIC_BASE_URL.
func setup(ctx context.Context, a, key, number, model string) (channel, error) {
	var ch channel
	var agent struct {
		AgentID string `json:"agentId"`
	}
	if err := call(ctx, a+"/api/agents", key, "application/yaml", []byte(fmt.Sprintf(blueprint, model)), &agent); err != nil {
		return ch, fmt.Errorf("creating the agent: %w", err)
	}
	body, _ := json.Marshal(map[string]any{"provider": "sms", "name": "Bench", "config": map[string]string{"phone_number": number}})
	var c struct {
		ID         string  `json:"id"`
		Status     string  `json:"status"`
		Setup      *string `json:"setup"`
		InboundURL string  `json:"inbound_url"`
	}
	if err := call(ctx, a+"/api/channels", key, "application/json", body, &c); err != nil {
		return ch, fmt.Errorf("connecting the channel: %w", err)
	}
	if c.Status != "connected" {
		setup := ""
		if c.Setup != nil {
			setup = *c.Setup
		}
		return ch, fmt.Errorf("the channel is %s, not connected: %s", c.Status, setup)
	}
	if !strings.HasPrefix(c.InboundURL, a+"/") {
		return ch, fmt.Errorf("the inbound URL %s is not on %s: start replica A with PUBLIC_BASE_URL=%s", c.InboundURL, a, a)
	}
	ch = channel{ID: c.ID, AgentID: agent.AgentID, InboundURL: c.InboundURL, Path: strings.TrimPrefix(c.InboundURL, a)}

	mc, err := mcpclient.NewStreamableHttpClient(a+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		return ch, err
	}
	defer mc.Close()
	if err := mc.Start(ctx); err != nil {
		return ch, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "smsload", Version: "1"}
	if _, err := mc.Initialize(ctx, init); err != nil {
		return ch, fmt.Errorf("MCP initialize: %w", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "deploy_agent"
	req.Params.Arguments = map[string]any{"agent_id": ch.AgentID, "channel_id": ch.ID}
	res, err := mc.CallTool(ctx, req)
	if err != nil {
		return ch, fmt.Errorf("deploy_agent: %w", err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Success bool  `json:"success"`
		Inbound *bool `json:"inbound"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || !out.Success || out.Inbound == nil || !*out.Inbound {
		return ch, fmt.Errorf("deploy_agent did not give the agent the channel's inbound seat: %s", raw)
	}
	return ch, nil
}

// call POSTs body to url with the key and decodes the 2xx answer into out.
func call(ctx context.Context, url, key, contentType string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	return json.Unmarshal(b, out)
}
