// Package webchat is the public face of an agent on the webchat channel: the rules of the
// embed routes (which deployment, which pages may use it, whether the chat takes a message
// now, which visitor may continue which conversation) in Service, the visitor tokens in
// Tokens, and the widget's script, style sheet and loader (assets.go). The HTTP layer
// (server/embed.go) only binds requests and writes answers.
package webchat

// Budgets of the public routes, in requests per minute: one visitor (their token, or their
// address before they have one) and one deployment (all its visitors together).
const (
	VisitorRPM    = 20
	DeploymentRPM = 300
)
