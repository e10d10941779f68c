package sms

import "strings"

// Keyword is a carrier keyword: a message that, on its own, asks to stop, resume or get help.
// Carriers and CTIA rules require honouring these whatever the agent would have said, so
// they are recognised before a message reaches an agent.
type Keyword int

// The keywords, KeywordNone for an ordinary message.
const (
	KeywordNone Keyword = iota
	KeywordStop
	KeywordStart
	KeywordHelp
)

// String is the keyword's canonical word, for logs and API fields.
func (k Keyword) String() string {
	switch k {
	case KeywordStop:
		return "STOP"
	case KeywordStart:
		return "START"
	case KeywordHelp:
		return "HELP"
	default:
		return "NONE"
	}
}

// keywords are the words each keyword is recognised by: the standard opt-out, opt-in and
// help words that carriers (and the provider's own filtering) act on.
var keywords = map[string]Keyword{
	"STOP": KeywordStop, "STOPALL": KeywordStop, "UNSUBSCRIBE": KeywordStop,
	"CANCEL": KeywordStop, "END": KeywordStop, "QUIT": KeywordStop,
	"START": KeywordStart, "UNSTOP": KeywordStart, "YES": KeywordStart,
	"HELP": KeywordHelp, "INFO": KeywordHelp,
}

// KeywordOf is the keyword body is, if it is one. Only the whole message counts, so "stop
// it please" or "yes please" stay ordinary messages for the agent; case, surrounding
// whitespace and trailing '.', '!' or ')' (as in "Stop!") are ignored.
func KeywordOf(body string) Keyword {
	word := strings.TrimRight(strings.TrimSpace(body), ".!) \t\r\n")
	return keywords[strings.ToUpper(word)]
}

// StopConfirmation is the one message sent after an opt-out, the last the number receives.
func StopConfirmation(workspace string) string {
	return "You are unsubscribed from " + workspace +
		" and will receive no more messages. Reply START to resubscribe."
}

// StartConfirmation answers an opt-in, saying how to leave again as carriers require.
func StartConfirmation(workspace string) string {
	return "You are resubscribed to " + workspace +
		" messages. Reply HELP for help, STOP to unsubscribe."
}

// DefaultHelpText answers HELP when the workspace has written no help text of its own: who
// is texting and how to stop, which carriers require of every help reply.
func DefaultHelpText(workspace string) string {
	return workspace + ": automated messages. Msg & data rates may apply. " +
		"Reply STOP to unsubscribe."
}
