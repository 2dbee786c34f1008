package acp

// notificationRing is the growable FIFO behind the notification queue. It
// starts empty, doubles up to the configured bound as notifications pile up,
// and lets go of a large backing array once it drains, so a generous bound
// (Kandev uses 131072) costs nothing while the handler keeps up.
type notificationRing struct {
	buf  []queuedNotification
	head int
	n    int
}

const (
	// minRingSize is the first allocation of the ring.
	minRingSize = 16
	// maxIdleRingSize is the largest backing array kept once the ring empties.
	maxIdleRingSize = 256
)

func (q *notificationRing) len() int { return q.n }

// push appends an item; the caller ensures q.len() < limit.
func (q *notificationRing) push(item queuedNotification, limit int) {
	if q.n == len(q.buf) {
		q.grow(limit)
	}
	i := q.head + q.n
	if i >= len(q.buf) {
		i -= len(q.buf)
	}
	q.buf[i] = item
	q.n++
}

func (q *notificationRing) grow(limit int) {
	size := 2 * len(q.buf)
	if size < minRingSize {
		size = minRingSize
	}
	if size > limit {
		size = limit
	}
	if size <= q.n {
		size = q.n + 1
	}
	buf := make([]queuedNotification, size)
	k := copy(buf, q.buf[q.head:])
	copy(buf[k:], q.buf[:q.head])
	q.buf = buf
	q.head = 0
}

// pop removes and returns the oldest item; the caller ensures q.len() > 0.
func (q *notificationRing) pop() queuedNotification {
	item := q.buf[q.head]
	q.buf[q.head] = queuedNotification{}
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.n--
	if q.n == 0 {
		q.head = 0
		if len(q.buf) > maxIdleRingSize {
			q.buf = nil
		}
	}
	return item
}
