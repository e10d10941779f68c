package main

import (
	"testing"
	"time"
)

// The check must see a missing reply, a duplicate, a reply to the wrong number and a reply
// naming no message, and pass a run where each accepted message has exactly one reply.
func TestReportChecksExactlyOnce(t *testing.T) {
	l := newLoader(loadConfig{rate: 4, duration: time.Second, senders: 2})
	for _, m := range l.msgs {
		m.accepted, m.firstAccepted = true, true
	}
	l.msgs[3].accepted = false // refused, never stored
	stored := dbFacts{Inbound: 3, Outbound: 3, InboundByStatus: map[string]int{"answered": 3},
		StoredSIDs: map[string]bool{l.msgs[0].sid: true, l.msgs[1].sid: true, l.msgs[2].sid: true}}
	reply := func(n int) sentSMS { return sentSMS{To: l.msgs[n].from, Body: "re: " + l.msgs[n].body} }

	good := report(l, time.Now(), matchReplies(l.msgs, []sentSMS{reply(0), reply(1), reply(2)}), true, stored)
	if !good.ExactlyOnce || good.Answered != 3 || good.NeverAccepted != 1 || !good.DBAgrees {
		t.Fatalf("a clean run fails the check: %+v", good)
	}

	wrongTo := reply(2)
	wrongTo.To = l.msgs[1].from // senders alternate, so 1 and 2 are different numbers
	bad := report(l, time.Now(), matchReplies(l.msgs, []sentSMS{reply(0), reply(0), wrongTo, {To: "+1", Body: "hello"}}), false, stored)
	if bad.ExactlyOnce || bad.Duplicates != 1 || bad.ExtraSMS != 1 || bad.Missing != 2 || bad.WrongRecipient != 1 || bad.Unmatched != 1 {
		t.Fatalf("the check missed something: %+v", bad)
	}

	unfinished := stored
	unfinished.InboundByStatus = map[string]int{"answered": 2, "answering": 1}
	if r := report(l, time.Now(), matchReplies(l.msgs, []sentSMS{reply(0), reply(1), reply(2)}), true, unfinished); r.DBAgrees || r.ExactlyOnce {
		t.Fatal("a message left answering passes")
	}
}

// "question 1" must not be read as the answer to "question 10", nor the other way round.
func TestRepliesMatchWholeNumbers(t *testing.T) {
	l := newLoader(loadConfig{rate: 11, duration: time.Second, senders: 11})
	r := matchReplies(l.msgs, []sentSMS{{To: l.msgs[10].from, Body: "re: question 10"}})
	if r.perMessage[10] != 1 || r.perMessage[1] != 0 {
		t.Fatalf("%v", r.perMessage)
	}
}
