package acp

// Defaults and hard limits of a Connection.
const (
	// defaultMaxQueuedNotifications bounds the inbound notification queue when
	// WithMaxQueuedNotifications is not given (or given n <= 0).
	defaultMaxQueuedNotifications = 1024

	// defaultMaxInflightRequests bounds the inbound requests whose handlers
	// run at the same time when WithMaxInflightRequests is not given.
	defaultMaxInflightRequests = 1024

	// defaultMaxQueuedNotificationBytes bounds the params bytes of queued
	// notifications (and the one in its handler) when
	// WithMaxQueuedNotificationBytes is not given.
	defaultMaxQueuedNotificationBytes = 16 << 20

	// maxLineBytes is the frame limit: the longest line (newline excluded)
	// a connection accepts from its peer.
	maxLineBytes = 64 << 20
)

// ConnectionOption configures a connection. It is accepted by NewConnection,
// NewClientSideConnection and NewAgentSideConnection; nil options are
// skipped.
type ConnectionOption func(*connectionOptions)

// connectionOptions holds the settings ConnectionOptions change.
type connectionOptions struct {
	maxQueuedNotifications     int
	maxQueuedNotificationBytes int
	maxInflightRequests        int
	orderedRequests            bool
	closeOnOverflow            bool
	// maxLineBytes is the frame limit, and readAheadNotifications and
	// readAheadBytes the read-ahead caps; fixed outside tests.
	maxLineBytes           int
	readAheadNotifications int
	readAheadBytes         int
}

// defaultConnectionOptions returns the settings of a connection built without
// options.
func defaultConnectionOptions() connectionOptions {
	return connectionOptions{
		maxQueuedNotifications:     defaultMaxQueuedNotifications,
		maxQueuedNotificationBytes: defaultMaxQueuedNotificationBytes,
		maxInflightRequests:        defaultMaxInflightRequests,
		maxLineBytes:               maxLineBytes,
		readAheadNotifications:     readAheadMaxNotifications,
		readAheadBytes:             readAheadMaxBytes,
	}
}

// applyConnectionOptions applies opts over the defaults, skipping nil ones.
func applyConnectionOptions(opts []ConnectionOption) connectionOptions {
	o := defaultConnectionOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithMaxQueuedNotifications sets how many inbound notifications may wait
// for their (strictly ordered, one at a time) handler; n <= 0 selects the
// default of 1024. The queue grows on demand up to n and shrinks when it
// empties, so a large bound such as 131072 costs memory only while that many
// notifications are actually waiting.
//
// Flow control: when n are waiting, the connection stops reading from the
// peer until the handler has taken one, so the peer's writes wait in the
// pipe; a burst of any length is delivered completely and in order, with a
// handler of any speed, and the queue's memory stays within n notifications
// and WithMaxQueuedNotificationBytes. One exception keeps a handler that
// calls the peer from deadlocking: while a call made with a handler's
// context, or made while a handler runs, awaits its response (which may be
// in the pipe behind the burst), the reader goes on reading past n, up to a read-ahead cap of
// max(n, 262144) notifications and max(WithMaxQueuedNotificationBytes,
// 256 MiB) of params; reaching the cap ends the connection with an error
// wrapping ErrNotificationQueueOverflow that names the cap.
//
// Upstream closes the connection when the queue is full; that stays
// available with WithCloseOnNotificationOverflow.
func WithMaxQueuedNotifications(n int) ConnectionOption {
	return func(o *connectionOptions) {
		if n <= 0 {
			n = defaultMaxQueuedNotifications
		}
		o.maxQueuedNotifications = n
	}
}

// WithMaxQueuedNotificationBytes bounds the memory of the notification
// queue: the total size of the params of the notifications waiting for their
// handler and of the one being handled; n <= 0 selects the default of
// 16 MiB. When it is reached the reader waits, as for
// WithMaxQueuedNotifications, and resumes once they are down to half; a
// single notification is always accepted, so with the default frames of
// 16 MiB or more are read one at a time: the next is read only after the
// handler of the previous one returned. Upstream bounds the count only.
func WithMaxQueuedNotificationBytes(n int) ConnectionOption {
	return func(o *connectionOptions) {
		if n <= 0 {
			n = defaultMaxQueuedNotificationBytes
		}
		o.maxQueuedNotificationBytes = n
	}
}

// WithCloseOnNotificationOverflow restores upstream's overflow policy
// instead of flow control: a notification arriving when
// WithMaxQueuedNotifications are waiting (or whose params would take the
// waiting ones past WithMaxQueuedNotificationBytes) closes the connection
// with cause ErrNotificationQueueOverflow, logged at Error with the
// capacity. For hosts that prefer losing a connection to a slow handler over
// slowing the peer down.
func WithCloseOnNotificationOverflow() ConnectionOption {
	return func(o *connectionOptions) { o.closeOnOverflow = true }
}

// WithMaxInflightRequests sets how many inbound requests may have their
// handler running at the same time; n <= 0 selects the default of 1024.
// Flow control: a request arriving while n handlers run waits for one of
// them to return, and meanwhile the connection reads nothing more from the
// peer, so the peer's writes wait in the pipe; no request is refused for
// load, and a peer that reads its replies has at most n handlers and one
// waiting request in memory. While a call made from (or while) a handler
// awaits its response, the reader reads on past the bound, queueing
// requests up to the read-ahead cap (as WithMaxQueuedNotifications
// describes), since the handlers may be waiting for that response; at the
// cap the connection ends with an error wrapping ErrRequestBacklogOverflow.
// Upstream has no limit (one goroutine per request).
func WithMaxInflightRequests(n int) ConnectionOption {
	return func(o *connectionOptions) {
		if n <= 0 {
			n = defaultMaxInflightRequests
		}
		o.maxInflightRequests = n
	}
}

// WithOrderedRequests makes every inbound request wait, before its handler
// runs, until the handlers of all notifications received before it have
// returned: the response barrier applied to inbound requests. A client then
// sees an agent's request (cursor/task, session/request_permission) after
// the session updates the agent sent ahead of it, as it would with one
// ordered worker. Requests still run concurrently with each other and with
// later notifications. Upstream (and the default) starts each request at
// once, so a request may overtake notifications that precede it on the
// wire.
//
// One exception keeps calls from notification handlers live: a request
// that arrives while a notification handler awaits a call it made with its
// ctx, or that waits when such a call starts, runs at once, since the peer
// may need its answer before it answers that call (an agent asking for
// permission while it handles the call). See Connection, "Calls from
// handlers". Otherwise a notification handler must not wait for an inbound
// request that arrives after its notification (it would wait for itself);
// the request's context ending releases the wait.
func WithOrderedRequests() ConnectionOption {
	return func(o *connectionOptions) { o.orderedRequests = true }
}
