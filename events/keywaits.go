package events

import (
	"sync"

	"github.com/google/uuid"

	"switchboard/store"
)

// A retry that finds its Idempotency-Key held by a running request waits for that request.
// It learns that the key was completed or released from an announcement on
// store.IdempotencyChannel, heard by the hub's one LISTEN connection, instead of polling the
// key with a write transaction; the waiter still looks again now and then in case an
// announcement was lost.

// keyWaits is the set of waiting requests per key (store.IdempotencyToken).
type keyWaits struct {
	mu      sync.Mutex
	waiting map[string]map[chan struct{}]struct{}
}

// WaitKey returns a channel that is signalled when the workspace's Idempotency-Key is
// announced as completed or released, or when announcements may have been lost (the
// listener reconnected). Call stop when done waiting. Register before looking at the key,
// so that a change right after the look is not missed.
func (h *Hub) WaitKey(workspaceID uuid.UUID, key string) (changed <-chan struct{}, stop func()) {
	return h.wait(store.IdempotencyToken(workspaceID, key))
}

func (h *Hub) wait(token string) (changed <-chan struct{}, stop func()) {
	c := make(chan struct{}, 1)
	w := &h.keys
	w.mu.Lock()
	if w.waiting == nil {
		w.waiting = map[string]map[chan struct{}]struct{}{}
	}
	if w.waiting[token] == nil {
		w.waiting[token] = map[chan struct{}]struct{}{}
	}
	w.waiting[token][c] = struct{}{}
	w.mu.Unlock()
	return c, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.waiting[token], c)
		if len(w.waiting[token]) == 0 {
			delete(w.waiting, token)
		}
	}
}

// KeyWaiters counts the requests waiting for a key (for tests and metrics).
func (h *Hub) KeyWaiters() int {
	h.keys.mu.Lock()
	defer h.keys.mu.Unlock()
	n := 0
	for _, m := range h.keys.waiting {
		n += len(m)
	}
	return n
}

// keyChanged signals the waiters of one key (token), or of every key when token is empty.
func (h *Hub) keyChanged(token string) {
	w := &h.keys
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, waiters := range w.waiting {
		if token != "" && t != token {
			continue
		}
		for c := range waiters {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// WaitConversation returns a channel signalled when a person writes into the conversation
// (store.Tx.AnnounceConversation) or announcements may have been lost.
func (h *Hub) WaitConversation(workspaceID, conversationID uuid.UUID) (changed <-chan struct{}, stop func()) {
	return h.wait(store.ConversationToken(workspaceID, conversationID))
}
