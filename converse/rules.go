package converse

import (
	"regexp"
	"strings"
	"unicode"

	"switchboard/apierr"
	"switchboard/blueprint"
	"switchboard/store"
)

// words splits text into lower-case words: runs of letters, digits and apostrophes (’
// becomes '), so that matching ignores case, punctuation and spacing.
func words(s string) []string {
	s = strings.ReplaceAll(strings.ToLower(s), "’", "'")
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// containsPhrase reports whether the words of phrase occur in text, in order and next to one
// another, as whole words: "refund" matches "I want a Refund!" but not "refunds" or
// "nonrefundable".
func containsPhrase(text []string, phrase string) bool {
	p := words(phrase)
	if len(p) == 0 {
		return false
	}
outer:
	for i := 0; i+len(p) <= len(text); i++ {
		for j, w := range p {
			if text[i+j] != w {
				continue outer
			}
		}
		return true
	}
	return false
}

// firstPhrase is the first of phrases that text contains, or "".
func firstPhrase(text []string, phrases []string) string {
	for _, p := range phrases {
		if containsPhrase(text, p) {
			return p
		}
	}
	return ""
}

// HumanRequestPhrases are what the user_request trigger listens for: a message containing
// one of them (whole words, any case) asks for a human.
var HumanRequestPhrases = []string{
	"human", "a person", "real person", "live person", "live agent", "human agent", "real agent",
	"representative", "operator", "someone from your team", "speak to someone", "talk to someone",
	"speak with someone", "talk with someone", "customer service", "customer support",
}

// DefaultEscalationKeywords start a keyword_match escalation whose blueprint lists no
// keywords of its own.
var DefaultEscalationKeywords = []string{"complaint", "refund", "urgent", "emergency", "lawyer", "legal action"}

// Sentiment lexicon: each negative word scores -1, each strong one -2, each positive one +1;
// a negator (not, never, no, don't, isn't, ...) up to two words before a positive word turns
// it into -1 ("not helpful"). A message scoring SentimentThreshold or lower escalates.
var (
	negativeWords = map[string]int{
		"bad": 1, "terrible": 1, "awful": 1, "horrible": 1, "useless": 1, "angry": 1, "annoyed": 1,
		"annoying": 1, "frustrated": 1, "frustrating": 1, "disappointed": 1, "disappointing": 1,
		"ridiculous": 1, "rubbish": 1, "garbage": 1, "stupid": 1, "worse": 1, "broken": 1, "upset": 1,
		"hate": 2, "worst": 2, "furious": 2, "unacceptable": 2, "scam": 2, "disgusting": 2, "pathetic": 2,
	}
	positiveWords = map[string]bool{
		"good": true, "great": true, "thanks": true, "thank": true, "helpful": true, "excellent": true,
		"perfect": true, "love": true, "awesome": true, "nice": true, "happy": true, "useful": true,
	}
	negators = map[string]bool{
		"not": true, "never": true, "no": true, "don't": true, "doesn't": true, "isn't": true,
		"wasn't": true, "aren't": true, "didn't": true, "cannot": true, "can't": true, "won't": true,
	}
)

// SentimentThreshold is the score at or below which the sentiment trigger fires.
const SentimentThreshold = -2

// Sentiment scores a message with the lexicon above.
func Sentiment(text string) int {
	ws := words(text)
	score := 0
	for i, w := range ws {
		if n, ok := negativeWords[w]; ok {
			score -= n
			continue
		}
		if positiveWords[w] {
			negated := (i > 0 && negators[ws[i-1]]) || (i > 1 && negators[ws[i-2]])
			if negated {
				score--
			} else {
				score++
			}
		}
	}
	return score
}

// CannotHelpPhrases mark a reply in which the model says it could not answer; such a turn
// counts as a failed attempt. The agent's instructions ask the model to say "I'm sorry, I
// don't know" in that case.
var CannotHelpPhrases = []string{
	"i don't know", "i do not know", "i'm not sure", "i am not sure", "i can't help", "i cannot help",
	"i'm unable to", "i am unable to", "i couldn't find", "i could not find", "i don't have that information",
	"i don't have information", "i do not have information", "not able to help",
}

func cannotHelp(reply string) bool { return firstPhrase(words(reply), CannotHelpPhrases) != "" }

var (
	emailPattern = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	phonePattern = regexp.MustCompile(`\+?[0-9][0-9 ().\-]{5,}[0-9]`)
	namePattern  = regexp.MustCompile(`(?i)\b(?:my name is|i am|i'm|this is|name:)\s+([\p{L}][\p{L}'\-]*(?:\s+[\p{L}][\p{L}'\-]*)?)`)
)

// extractContact reads contact details from a message: the first email address, the first
// phone number (at least 7 digits), and a name introduced by "my name is", "I am", "I'm",
// "this is" or "name:" (one or two words).
func extractContact(text string) (name, email, phone string) {
	email = emailPattern.FindString(text)
	rest := strings.Replace(text, email, " ", 1)
	if p := phonePattern.FindString(rest); p != "" {
		digits := 0
		for _, r := range p {
			if unicode.IsDigit(r) {
				digits++
			}
		}
		if digits >= 7 && digits <= 15 {
			phone = strings.TrimSpace(p)
		}
	}
	if m := namePattern.FindStringSubmatch(rest); m != nil {
		name = strings.TrimSpace(m[1])
		// "I'm Ada and my email is ..." keeps the name only.
		if fields := strings.Fields(name); len(fields) == 2 && strings.EqualFold(fields[1], "and") {
			name = fields[0]
		}
	}
	return name, email, phone
}

// Fixed replies of the rules.
const (
	DefaultAfterHoursMessage = "We are closed right now. Please come back during our opening hours."
	BlockedTopicReply        = "I'm sorry, I can't discuss that topic. Is there something else I can help you with?"
	askContact               = "Could you give me your name and an email address or phone number?"
)

// rules applies the rules that answer without the model (see the package comment); nil
// means the model answers.
func (s *Service) rules(tc turnContext, message string) (*outcome, error) {
	conv := tc.conv
	flow := flowOf(conv)
	out := &outcome{flow: flow}
	if conv.Status == StatusClosed {
		return nil, apierr.Conflict("conversation_closed", "The conversation %s is closed; start a new one (leave conversation_id out).", conv.ShortID)
	}
	if conv.AssigneeUserID != nil {
		// A person holds the conversation (the team inbox): the message is theirs to
		// answer, contact details included.
		out.rule = "held_by_person"
		return out, nil
	}
	if conv.AwaitingContact {
		name, email, phone := extractContact(message)
		if email != "" || phone != "" {
			c := store.Contact{Name: nonEmpty(name), Email: nonEmpty(email), Phone: nonEmpty(phone)}
			out.contact = &c
			out.flow.AwaitingContact = false
			out.rule = "contact_collected"
			out.reply = "Thank you" + greetName(name, conv.Contact.Name) + ". Our team will get back to you at " + firstOf(email, phone) + "."
			if escalationEmail(tc.bp) != "" {
				out.notify = "Contact details received"
			}
			return out, nil
		}
		if conv.Status == StatusEscalated {
			out.rule = "contact_requested"
			out.reply = "So that our team can get back to you: " + askContact
			return out, nil
		}
	}
	if conv.Status == StatusEscalated {
		out.rule = "handed_to_human"
		if conv.PickupTimedOutAt == nil && conv.EscalatedAt != nil && tc.now.Sub(*conv.EscalatedAt) >= pickupTimeout(tc.bp) {
			now := tc.now
			out.flow.PickupTimedOutAt = &now
			out.rule = "pickup_timed_out"
			if conv.Contact.Reachable() {
				out.reply = "I'm sorry, nobody from our team is free right now. They will get back to you at " + firstOf(deref(conv.Contact.Email), deref(conv.Contact.Phone)) + "."
			} else {
				out.reply = "I'm sorry, nobody from our team is free right now. " + askContact + " They will get back to you."
				out.flow.AwaitingContact = true
			}
		}
		return out, nil
	}
	r := tc.bp.BusinessRules
	if r != nil {
		open, err := Open(r.BusinessHours, tc.now)
		if err != nil {
			return nil, err
		}
		if !open {
			out.rule = "after_hours"
			out.reply = r.BusinessHours.AfterHoursMessage
			if out.reply == "" {
				out.reply = DefaultAfterHoursMessage
			}
			return out, nil
		}
		ws := words(message)
		if topic := firstPhrase(ws, r.BlockedTopics); topic != "" {
			out.rule = "blocked_topic"
			out.reply = BlockedTopicReply
			return out, nil
		}
		if e := r.Escalation; enabled(e) && conv.EscalatedAt == nil && messageTriggers(e, ws, message) {
			s.escalate(tc, string(e.Trigger), out)
			return out, nil
		}
	}
	return nil, nil
}

func enabled(e *blueprint.Escalation) bool {
	return e != nil && e.Enabled != nil && *e.Enabled && e.Trigger != "" && e.Action != ""
}

// messageTriggers reports whether a message fires a message-based escalation trigger.
func messageTriggers(e *blueprint.Escalation, ws []string, message string) bool {
	switch e.Trigger {
	case blueprint.TriggerUserRequest:
		return firstPhrase(ws, HumanRequestPhrases) != ""
	case blueprint.TriggerKeywordMatch:
		keywords := e.Keywords
		if len(keywords) == 0 {
			keywords = DefaultEscalationKeywords
		}
		return firstPhrase(ws, keywords) != ""
	case blueprint.TriggerSentiment:
		return Sentiment(message) <= SentimentThreshold
	}
	return false
}

func greetName(name string, known *string) string {
	if name == "" && known != nil {
		name = *known
	}
	if name == "" {
		return ""
	}
	return ", " + name
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
