package converse

import (
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"switchboard/agent"
	"switchboard/llm"
	"switchboard/store"
)

// historyCache keeps the history windows of recent turns in memory, decoded, each message
// with its seq and its row's version (the messages row's xmin, which every change of the row
// changes: an erasure blanks it), so that a turn continuing a conversation has the database
// send back only the messages it has not seen, and decodes only those. A tool result of a
// knowledge search is a few kilobytes of JSON: read, sent and decoded again on every later
// turn of its conversation, it was the larger part of what reading the window cost. What a
// turn writes is kept at its commit (extend: the append reports each row's seq and version),
// so the next turn does not read back its predecessor's messages either.
//
// Why a kept message cannot be stale, on any replica: the turn's read (store.AgentTurnState)
// returns every row of the window as it is now, with its seq and version, and elides the
// content only of the seqs the cache named; a kept message stands for a row only when both
// match. When any elided row has no such copy (it was erased, or the window reaches further
// back than the copy), the window is read again in full. The window itself (which rows, how
// many bytes) is always the database's.
type historyCache struct {
	mu    sync.Mutex
	m     map[historyKey]*historyEntry // by the conversation's UUID and by its short id
	bytes int
	stale atomic.Int64 // reads whose kept copy did not hold (window's ok false), for the tests
}

// historyKey names a conversation as a turn's request does: by its UUID or its short id.
type historyKey struct {
	workspace uuid.UUID
	ref       string
}

type historyEntry struct {
	keys  [2]historyKey
	conv  uuid.UUID
	msgs  []keptMessage // in seq order, without gaps in the window they came from
	bytes int
}

type keptMessage struct {
	seq     int
	version int64
	bytes   int
	msg     llm.Message
}

// historyCacheBytes bounds what the cache holds (the stored size of the messages); past it,
// entries taken at random make room.
const historyCacheBytes = 64 << 20

// known is the range of seqs kept for the conversation ref names (0, 0: none).
func (c *historyCache) known(ws uuid.UUID, ref string) (from, to int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[historyKey{ws, ref}]
	if e == nil || len(e.msgs) == 0 {
		return 0, 0
	}
	return e.msgs[0].seq, e.msgs[len(e.msgs)-1].seq
}

// window decodes the history window st read with the range known gave for ref: the elided
// rows from their kept copies, the others with agent.FromStored. It keeps the decoded window
// in place of the conversation's copy. ok is false when an elided row has no copy of its seq
// and version: the caller reads the window again, with nothing elided.
func (c *historyCache) window(ws uuid.UUID, ref string, st store.AgentTurn) (msgs []llm.Message, ok bool, err error) {
	conv := st.Conversation.Conversation
	var old []keptMessage
	if elides(st.History) {
		c.mu.Lock()
		if e := c.m[historyKey{ws, ref}]; e != nil && e.conv == conv.ID {
			old = e.msgs // never changed once kept: read without the lock
		}
		c.mu.Unlock()
	}
	kept := make([]keptMessage, 0, len(st.History))
	msgs = make([]llm.Message, 0, len(st.History))
	size := 0
	for _, r := range st.History {
		k := keptMessage{seq: r.Seq, version: r.Version}
		if r.Elided {
			o, found := keptAt(old, r.Seq)
			if !found || o.version != r.Version {
				c.stale.Add(1)
				return nil, false, nil
			}
			k = o
		} else {
			if k.msg, err = agent.FromStored(r.Message); err != nil {
				return nil, false, err
			}
			k.bytes = len(r.Content) + len(r.ToolCalls) + len(r.ToolResults)
		}
		kept, msgs, size = append(kept, k), append(msgs, k.msg), size+k.bytes
	}
	c.put(&historyEntry{keys: [2]historyKey{{ws, conv.ID.String()}, {ws, conv.ShortID}}, conv: conv.ID, msgs: kept, bytes: size})
	return msgs, true, nil
}

// extend keeps the messages a turn appended to conversation conv (agent.Outcome.Appended)
// after the conversation's kept copy, so that the next turn's read elides them too instead of
// reading, sending and decoding them again (a turn's tool result of a knowledge search is a
// few kilobytes). They stand for their rows by seq and version as any kept message does. They
// are kept only when they follow the copy without a gap (nothing else was appended between
// the read and the commit): a row in a gap would be elided with no copy of it, and the window
// read again in full.
func (c *historyCache) extend(ws uuid.UUID, conv uuid.UUID, app []agent.AppendedMessage) {
	if len(app) == 0 {
		return
	}
	c.mu.Lock()
	e := c.m[historyKey{ws, conv.String()}]
	c.mu.Unlock()
	if e == nil || e.conv != conv || len(e.msgs) > 0 && app[0].Seq != e.msgs[len(e.msgs)-1].seq+1 {
		return
	}
	kept := make([]keptMessage, len(e.msgs), len(e.msgs)+len(app))
	copy(kept, e.msgs) // a kept slice never changes: readers hold it without the lock
	size := e.bytes
	for i, m := range app {
		if i > 0 && m.Seq != app[i-1].Seq+1 {
			break
		}
		kept, size = append(kept, keptMessage{seq: m.Seq, version: m.Version, bytes: m.Bytes, msg: m.Message}), size+m.Bytes
	}
	c.put(&historyEntry{keys: e.keys, conv: conv, msgs: kept, bytes: size})
}

func elides(rows []store.WindowMessage) bool {
	for _, r := range rows {
		if r.Elided {
			return true
		}
	}
	return false
}

// keptAt finds the kept message of seq in msgs (in seq order).
func keptAt(msgs []keptMessage, seq int) (keptMessage, bool) {
	if len(msgs) == 0 || seq < msgs[0].seq {
		return keptMessage{}, false
	}
	// Seqs of a window run without gaps but for notices (never in a window): look near
	// where it would be, then search.
	if i := seq - msgs[0].seq; i < len(msgs) && msgs[i].seq == seq {
		return msgs[i], true
	}
	for _, m := range msgs {
		if m.seq == seq {
			return m, true
		}
	}
	return keptMessage{}, false
}

func (c *historyCache) put(e *historyEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[historyKey]*historyEntry{}
	}
	if old := c.m[e.keys[0]]; old != nil {
		c.drop(old)
	}
	if e.bytes > historyCacheBytes/4 {
		return // a window that large would crowd out all others
	}
	for key, victim := range c.m { // at random: Go's map order
		if c.bytes+e.bytes <= historyCacheBytes {
			break
		}
		if key == victim.keys[0] {
			c.drop(victim)
		}
	}
	for _, k := range e.keys {
		c.m[k] = e
	}
	c.bytes += e.bytes
}

func (c *historyCache) drop(e *historyEntry) {
	for _, k := range e.keys {
		if c.m[k] == e {
			delete(c.m, k)
		}
	}
	c.bytes -= e.bytes
}
