package voice

import (
	"strings"

	"github.com/twilio/twilio-go/twiml"
)

// phrase is something the call flow says on its own (the agent's words come from its
// blueprint and model), in the agent's language.
type phrase int

const (
	phCannotPay  phrase = iota // the workspace cannot pay: an apology, then the call ends
	phNoAgent                  // no enabled agent holds the number
	phStillThere               // after one silent gather
	phGoodbye                  // after two silent gathers in a row
	phHolding                  // the model is slow: said before the <Redirect>
	phNotHeard                 // a turn got no answer
	phCallBack                 // a transfer without a number to dial
	phNoAnswer                 // a transfer nobody answered: leave a message
	phNoMessage                // nothing was recorded
	phRecorded                 // a message was recorded
	phraseCount
)

// phrases are the flow's own phrases per primary language subtag. A language missing here
// falls back to English, said in an English voice (speaker.fixed).
var phrases = map[string][phraseCount]string{
	"en": {
		phCannotPay:  "Sorry, we cannot take your call right now. Please try again later. Goodbye.",
		phNoAgent:    "Sorry, nobody can take your call right now. Please try again later. Goodbye.",
		phStillThere: "Are you still there? How can I help?",
		phGoodbye:    "I did not hear anything, so I will hang up now. Thank you for calling. Goodbye.",
		phHolding:    "One moment, please.",
		phNotHeard:   "Sorry, I could not answer that just now. Could you say it again?",
		phCallBack:   "Someone from our team will get back to you. Thank you for calling. Goodbye.",
		phNoAnswer:   "Sorry, nobody could take your call. Please leave a message after the tone, and press the pound key or hang up when you are done.",
		phNoMessage:  "No message was recorded. Goodbye.",
		phRecorded:   "Thank you, your message was recorded. Goodbye.",
	},
	"de": {
		phCannotPay:  "Entschuldigung, wir können Ihren Anruf gerade nicht annehmen. Bitte versuchen Sie es später noch einmal. Auf Wiederhören.",
		phNoAgent:    "Entschuldigung, gerade kann niemand Ihren Anruf annehmen. Bitte versuchen Sie es später noch einmal. Auf Wiederhören.",
		phStillThere: "Sind Sie noch da? Wie kann ich helfen?",
		phGoodbye:    "Ich habe nichts gehört und lege jetzt auf. Vielen Dank für Ihren Anruf. Auf Wiederhören.",
		phHolding:    "Einen Moment, bitte.",
		phNotHeard:   "Entschuldigung, darauf konnte ich gerade nicht antworten. Können Sie das bitte wiederholen?",
		phCallBack:   "Jemand aus unserem Team meldet sich bei Ihnen. Vielen Dank für Ihren Anruf. Auf Wiederhören.",
		phNoAnswer:   "Leider konnte niemand Ihren Anruf annehmen. Bitte hinterlassen Sie nach dem Signalton eine Nachricht und drücken Sie die Rautetaste oder legen Sie auf, wenn Sie fertig sind.",
		phNoMessage:  "Es wurde keine Nachricht aufgezeichnet. Auf Wiederhören.",
		phRecorded:   "Vielen Dank, Ihre Nachricht wurde aufgezeichnet. Auf Wiederhören.",
	},
	"fr": {
		phCannotPay:  "Désolé, nous ne pouvons pas prendre votre appel pour le moment. Veuillez réessayer plus tard. Au revoir.",
		phNoAgent:    "Désolé, personne ne peut prendre votre appel pour le moment. Veuillez réessayer plus tard. Au revoir.",
		phStillThere: "Êtes-vous toujours là ? Comment puis-je vous aider ?",
		phGoodbye:    "Je n'ai rien entendu, je vais donc raccrocher. Merci de votre appel. Au revoir.",
		phHolding:    "Un instant, s'il vous plaît.",
		phNotHeard:   "Désolé, je n'ai pas pu répondre à cela. Pouvez-vous répéter ?",
		phCallBack:   "Un membre de notre équipe vous recontactera. Merci de votre appel. Au revoir.",
		phNoAnswer:   "Désolé, personne n'a pu prendre votre appel. Veuillez laisser un message après le bip, puis appuyez sur la touche dièse ou raccrochez.",
		phNoMessage:  "Aucun message n'a été enregistré. Au revoir.",
		phRecorded:   "Merci, votre message a été enregistré. Au revoir.",
	},
	"es": {
		phCannotPay:  "Lo sentimos, no podemos atender su llamada en este momento. Por favor, inténtelo más tarde. Adiós.",
		phNoAgent:    "Lo sentimos, nadie puede atender su llamada en este momento. Por favor, inténtelo más tarde. Adiós.",
		phStillThere: "¿Sigue ahí? ¿En qué puedo ayudarle?",
		phGoodbye:    "No he oído nada, así que voy a colgar. Gracias por su llamada. Adiós.",
		phHolding:    "Un momento, por favor.",
		phNotHeard:   "Lo siento, no he podido responder a eso. ¿Puede repetirlo?",
		phCallBack:   "Alguien de nuestro equipo se pondrá en contacto con usted. Gracias por su llamada. Adiós.",
		phNoAnswer:   "Lo sentimos, nadie ha podido atender su llamada. Deje un mensaje después del tono y pulse la tecla almohadilla o cuelgue cuando termine.",
		phNoMessage:  "No se ha grabado ningún mensaje. Adiós.",
		phRecorded:   "Gracias, su mensaje ha sido grabado. Adiós.",
	},
}

// phraser is the speaker that says the flow's own phrases for s: s itself when its language
// has them, else US English.
func (s speaker) phraser() (speaker, [phraseCount]string) {
	primary, _, _ := strings.Cut(strings.ToLower(s.language), "-")
	if t, ok := phrases[primary]; ok {
		return s, t
	}
	return speakers["en-us"], phrases["en"]
}

// fixed is a <Say> of the phrase p in the agent's language, or in English in an English
// voice when the flow has no phrases in that language.
func (s speaker) fixed(p phrase) twiml.Element {
	sp, t := s.phraser()
	return sp.say(t[p])
}
