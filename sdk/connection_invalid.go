package acp

// Strict JSON-RPC 2.0 framing: what the connection answers to messages that
// are not valid JSON-RPC, and the throttled log for those it cannot answer.
//
//   - A line that is not valid JSON but starts like JSON ('{' or '[') gets
//     -32700 Parse error with a null id; other text (an agent printing log
//     lines on stdout, say) is only logged, since nobody waits for a reply.
//   - A batch (a top-level array, empty or not) gets one -32600 Invalid
//     request with a null id and data {"error":"batch requests are not
//     supported"}: ACP does not use batches, and one error tells a peer
//     that sent one not to wait.
//   - Any other top-level value that is not an object (null, a number, a
//     string, true) gets -32600 with a null id.
//   - An object meant as a request (it has a method, or neither a result nor
//     an error) that is invalid gets -32600: an id that is not a string,
//     number or null, a method or jsonrpc member that is not a string, a
//     malformed error member. The reply echoes the id when it is a string
//     or a number, else it is null.
//   - A malformed response (result or error without method: a bad id, a
//     malformed error object, a null id) cannot be answered: it is logged.
//
// The "jsonrpc" member is not required to be "2.0" (as upstream): peers
// that leave it out keep working.
//
// Every such message is logged at Error, throttled per connection (see
// logThrottle).

import (
	"encoding/json"
	"sync"
	"time"
)

// Reasons given in the data of -32600 replies.
const (
	reasonBatch          = "batch requests are not supported"
	reasonNotObject      = "json-rpc message is not a JSON object"
	reasonNoMethodResult = "json-rpc message has neither method nor result nor error"
)

// nullID is the id of a reply to a message whose id cannot be used.
var nullID = json.RawMessage("null")

// rejectMalformed handles a line decodeEnvelope rejected: it answers with
// the spec's error when the line was meant as a request, and logs it.
func (c *Connection) rejectMalformed(line []byte, decodeErr error) {
	trimmed := trimJSONSpace(line)
	if !json.Valid(trimmed) {
		if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			c.logMalformed("failed to parse incoming message; answered -32700", line, decodeErr)
			c.writeResponse(nullID, nil, NewParseError(errorData(decodeErr.Error())))
			return
		}
		c.logMalformed("failed to parse incoming message", line, decodeErr)
		return
	}
	switch trimmed[0] {
	case '[':
		c.logMalformed("failed to parse incoming message (a batch); answered -32600", line, decodeErr)
		c.writeResponse(nullID, nil, NewInvalidRequest(errorData(reasonBatch)))
	case '{':
		m := scanLenient(trimmed)
		if !m.hasMethod && (m.hasResult || m.hasError) {
			c.logMalformed("failed to parse incoming message (a response)", line, decodeErr)
			return
		}
		c.logMalformed("failed to parse incoming message; answered -32600", line, decodeErr)
		c.writeResponse(replyID(m.id), nil, NewInvalidRequest(errorData(decodeErr.Error())))
	default:
		c.logMalformed("failed to parse incoming message; answered -32600", line, decodeErr)
		c.writeResponse(nullID, nil, NewInvalidRequest(errorData(reasonNotObject)))
	}
}

// lenientMembers is what scanLenient finds in an object.
type lenientMembers struct {
	id                             json.RawMessage
	hasMethod, hasResult, hasError bool
}

// scanLenient picks out the members that decide how an invalid envelope
// (valid JSON) is answered, whatever their values.
func scanLenient(obj []byte) lenientMembers {
	var m lenientMembers
	_ = objectText(obj, func(key []byte, escaped bool, value []byte) error {
		switch {
		case keyMatches(key, escaped, keyID):
			m.id = value
		case keyMatches(key, escaped, keyMethod):
			m.hasMethod = value[0] != 'n'
		case keyMatches(key, escaped, keyResult):
			m.hasResult = true
		case keyMatches(key, escaped, keyError):
			m.hasError = value[0] != 'n'
		}
		return nil
	}, errEnvelopeNotObject)
	return m
}

// validIDKind reports whether a (non-null) raw id is a string or a number,
// the id kinds JSON-RPC 2.0 allows.
func validIDKind(id json.RawMessage) bool {
	id = trimJSONSpace(id)
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || isDigit(id[0]))
}

// replyID is the id to answer an invalid request with: its own when it is
// a string or a number, else null.
func replyID(id json.RawMessage) json.RawMessage {
	if id != nil && validIDKind(id) {
		return id
	}
	return nullID
}

// rejectInvalidID answers a request whose id is not a string, number or
// null with -32600 and a null id.
func (c *Connection) rejectInvalidID(line []byte) {
	c.logMalformed("received request with an invalid id; answered -32600", line, errIDKind)
	c.writeResponse(nullID, nil, NewInvalidRequest(errorData(errIDKind.Error())))
}

// rejectEmpty answers an object with neither method, result nor error
// (nor a usable id), or a top-level null, with -32600 and a null id.
func (c *Connection) rejectEmpty(line []byte) {
	c.logMalformed("received message with neither id nor method; answered -32600", line, nil)
	c.writeResponse(nullID, nil, NewInvalidRequest(errorData(reasonNoMethodResult)))
}

// logMalformed logs one malformed inbound message, throttled.
func (c *Connection) logMalformed(msg string, line []byte, err error) {
	ok, suppressed := c.malformedLog.allow(time.Now())
	if !ok {
		return
	}
	args := []any{"raw", loggedLine(line)}
	if err != nil {
		args = append(args, "err", err)
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	c.log().Error(msg, args...)
}

// Throttle of the malformed-message log: at most malformedLogBurst lines
// per malformedLogWindow; the next line logged says how many were left
// out.
const (
	malformedLogBurst  = 10
	malformedLogWindow = time.Second
)

// logThrottle limits a log to malformedLogBurst lines per window, so a peer
// that sends garbage in a loop cannot flood the host's log.
type logThrottle struct {
	mu         sync.Mutex
	start      time.Time
	inWindow   int
	suppressed int
}

// allow reports whether a line may be logged at now, and how many lines
// were suppressed since the last one logged.
func (t *logThrottle) allow(now time.Time) (bool, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.start) >= malformedLogWindow {
		t.start, t.inWindow = now, 0
	}
	if t.inWindow >= malformedLogBurst {
		t.suppressed++
		return false, 0
	}
	t.inWindow++
	n := t.suppressed
	t.suppressed = 0
	return true, n
}
