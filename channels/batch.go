package channels

import "sync"

// batcher commits items in batches without a timer: the first to arrive while no batch
// commits commits every item queued by then (its own included); those arriving meanwhile
// wait, and the next of them to find no batch committing takes them all. Alone, an item
// commits at once; under load the batches grow with the commit's latency. The sends'
// records (finish) and the delivery reports (reportDelivery) are committed this way: one
// transaction and one WAL flush for many.
type batcher[T any] struct {
	mu         sync.Mutex
	queue      []*batched[T]
	committing bool
}

// batched is an item waiting for its batch, and then its outcome.
type batched[T any] struct {
	v    T
	err  error
	done chan struct{}
}

// finish records the item's outcome and wakes its caller; commit calls it once per item.
func (b *batched[T]) finish(err error) {
	b.err = err
	close(b.done)
}

// do queues v and returns once its batch committed (or failed), with its outcome. commit
// must finish every item of the batch it is given.
func (b *batcher[T]) do(v T, commit func([]*batched[T])) error {
	f := &batched[T]{v: v, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, f)
	if b.committing {
		b.mu.Unlock()
		<-f.done
		return f.err
	}
	b.committing = true
	batch := b.queue
	b.queue = nil
	b.mu.Unlock()
	commit(batch)
	b.mu.Lock()
	b.committing = false
	if len(b.queue) > 0 {
		// Those that queued meanwhile are committed by a goroutine of their own: this
		// caller goes on.
		b.committing = true
		next := b.queue
		b.queue = nil
		go b.drain(next, commit)
	}
	b.mu.Unlock()
	<-f.done
	return f.err
}

// drain commits batch, then whatever queued meanwhile, until nothing waits.
func (b *batcher[T]) drain(batch []*batched[T], commit func([]*batched[T])) {
	for {
		commit(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.committing = false
			b.mu.Unlock()
			return
		}
		batch = b.queue
		b.queue = nil
		b.mu.Unlock()
	}
}
