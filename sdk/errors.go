package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrPeerDisconnected is the cause carried by the errors an outbound call
// returns when the peer goes away before the call completes. The returned
// error is still a *RequestError (-32603, data {"error":"peer disconnected …"}),
// so errors.Is(err, ErrPeerDisconnected) and errors.As(err, &*RequestError)
// both hold.
var ErrPeerDisconnected = errors.New("peer disconnected")

// ErrNotificationQueueOverflow is the cause a connection closes with, under
// WithCloseOnNotificationOverflow, when the peer sends more notifications
// than the inbound queue holds (see WithMaxQueuedNotifications); without
// that option it is wrapped by the cause of a connection whose notification
// backlog reached the read-ahead cap while a notification handler awaited a
// response. Nothing is dropped silently: the connection ends, Done fires and
// Err returns (an error wrapping) this error, as do the calls it cut short.
var ErrNotificationQueueOverflow = errors.New("notification queue overflow")

// ErrRequestBacklogOverflow is wrapped by the cause of a connection whose
// backlog of inbound requests waiting for a handler slot (see
// WithMaxInflightRequests) reached the read-ahead cap while a call made
// from a handler awaited its response. Requests are never refused for load:
// this ends the connection instead of deadlocking it.
var ErrRequestBacklogOverflow = errors.New("inbound request backlog overflow")

// ErrPeerConnectionClosed is the cause a connection ends with when the peer
// closes its output stream (EOF on the reader).
var ErrPeerConnectionClosed = errors.New("peer connection closed")

// ErrConnectionClosed is the cause a connection ends with when the local side
// calls Connection.Close.
var ErrConnectionClosed = errors.New("connection closed")

// ErrLineTooLong is the cause a connection ends with when the peer sends a
// line longer than the frame limit of 64 MiB (67,108,864 bytes, newline not
// counted). Err returns it, and the calls it cuts short fail with
// "peer disconnected before response: json-rpc message line exceeds
// 67108864 bytes", matching both ErrPeerDisconnected and ErrLineTooLong
// under errors.Is.
var ErrLineTooLong = fmt.Errorf("json-rpc message line exceeds %d bytes", maxLineBytes)

// RequestError is a JSON-RPC error object. Outbound calls return it (possibly
// carrying an unexported cause reachable through Unwrap), and method handlers
// return it to answer a request with an error.
type RequestError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`

	// cause is what errors.Is/As see through Unwrap; never sent on the wire.
	cause error
}

// requestErrorView is the wire shape of a RequestError, used by Error so the
// text is exactly the compact JSON a peer would receive.
type requestErrorView struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error renders the error as compact JSON, e.g.
// {"code":-32603,"message":"Internal error","data":{"error":"boom"}}.
// A nil receiver gives "<nil>"; when Data cannot be marshalled the text falls
// back to "code N: message (data: …)".
func (e *RequestError) Error() string {
	if e == nil {
		return "<nil>"
	}
	b, err := json.Marshal(requestErrorView{Code: e.Code, Message: e.Message, Data: e.Data})
	if err == nil {
		return string(b)
	}
	if e.Data != nil {
		return fmt.Sprintf("code %d: %s (data: %v)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("code %d: %s", e.Code, e.Message)
}

// Unwrap returns the error's cause (for example ErrPeerDisconnected), or nil.
// It is safe on a nil receiver.
func (e *RequestError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.cause
}

// NewParseError returns a -32700 "Parse error" with the given data.
func NewParseError(data any) *RequestError {
	return &RequestError{Code: -32700, Message: "Parse error", Data: data}
}

// NewInvalidRequest returns a -32600 "Invalid request" with the given data.
func NewInvalidRequest(data any) *RequestError {
	return &RequestError{Code: -32600, Message: "Invalid request", Data: data}
}

// NewMethodNotFound returns a -32601 "Method not found" whose data is
// {"method": method}.
func NewMethodNotFound(method string) *RequestError {
	return &RequestError{Code: -32601, Message: "Method not found", Data: map[string]any{"method": method}}
}

// NewInvalidParams returns a -32602 "Invalid params" with the given data.
func NewInvalidParams(data any) *RequestError {
	return &RequestError{Code: -32602, Message: "Invalid params", Data: data}
}

// NewInternalError returns a -32603 "Internal error" with the given data.
func NewInternalError(data any) *RequestError {
	return &RequestError{Code: -32603, Message: "Internal error", Data: data}
}

// NewRequestCancelled returns a -32800 "Request cancelled" with the given data.
func NewRequestCancelled(data any) *RequestError {
	return &RequestError{Code: -32800, Message: "Request cancelled", Data: data}
}

// NewAuthRequired returns a -32000 "Authentication required" with the given
// data.
func NewAuthRequired(data any) *RequestError {
	return &RequestError{Code: -32000, Message: "Authentication required", Data: data}
}

// errorData is the {"error": text} data shape used by internal errors.
func errorData(text string) map[string]any {
	return map[string]any{"error": text}
}

// internalErrorWithCause returns -32603 {"error": text} whose Unwrap gives
// cause.
func internalErrorWithCause(text string, cause error) *RequestError {
	e := NewInternalError(errorData(text))
	e.cause = cause
	return e
}

// toRequestError converts a handler's error into the JSON-RPC error sent to
// the peer:
//   - a *RequestError, also when wrapped (errors.As), is sent as it is;
//   - an error matching context.Canceled becomes -32800 {"error": err.Error()};
//   - anything else, context.DeadlineExceeded included, becomes
//     -32603 {"error": err.Error()}.
//
// Upstream only recognises an unwrapped *RequestError; following the chain
// sends the code a wrapping handler meant.
func toRequestError(err error) *RequestError {
	if err == nil {
		return nil
	}
	var re *RequestError
	if errors.As(err, &re) && re != nil {
		return re
	}
	if errors.Is(err, context.Canceled) {
		return NewRequestCancelled(errorData(err.Error()))
	}
	return NewInternalError(errorData(err.Error()))
}
