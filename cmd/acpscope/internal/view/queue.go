package view

import "container/heap"

// cardQueue is a min-heap of cards by first sight (Card.order). Each card
// records its index in the queue (Card.at[slot]), so that it can be moved
// out of the queue from anywhere in O(log n).
type cardQueue struct {
	cards []*Card
	slot  int
}

func (q *cardQueue) Len() int           { return len(q.cards) }
func (q *cardQueue) Less(i, j int) bool { return q.cards[i].order < q.cards[j].order }
func (q *cardQueue) Swap(i, j int) {
	q.cards[i], q.cards[j] = q.cards[j], q.cards[i]
	q.cards[i].at[q.slot] = i
	q.cards[j].at[q.slot] = j
}

// Push and Pop are heap.Interface's; use put and oldest.
func (q *cardQueue) Push(x any) {
	c := x.(*Card)
	c.at[q.slot] = len(q.cards)
	q.cards = append(q.cards, c)
}

func (q *cardQueue) Pop() any {
	n := len(q.cards) - 1
	c := q.cards[n]
	q.cards[n] = nil
	q.cards = q.cards[:n]
	c.at[q.slot] = -1
	return c
}

// put adds c to the queue (in) or takes it out (!in); either is a no-op
// when c already is where it should be.
func (q *cardQueue) put(c *Card, in bool) {
	switch i := c.at[q.slot]; {
	case in && i < 0:
		heap.Push(q, c)
	case !in && i >= 0:
		heap.Remove(q, i)
	}
}

// oldest returns the first-seen card of the queue; the queue must not be
// empty.
func (q *cardQueue) oldest() *Card { return q.cards[0] }
