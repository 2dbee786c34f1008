package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRequestErrorText(t *testing.T) {
	cases := []struct {
		err  *RequestError
		want string
	}{
		{nil, "<nil>"},
		{NewInternalError(map[string]any{"error": "boom"}), `{"code":-32603,"message":"Internal error","data":{"error":"boom"}}`},
		{NewMethodNotFound("cursor/task"), `{"code":-32601,"message":"Method not found","data":{"method":"cursor/task"}}`},
		{NewParseError(nil), `{"code":-32700,"message":"Parse error"}`},
		{NewInvalidRequest("x"), `{"code":-32600,"message":"Invalid request","data":"x"}`},
		{NewInvalidParams(1), `{"code":-32602,"message":"Invalid params","data":1}`},
		{NewRequestCancelled(nil), `{"code":-32800,"message":"Request cancelled"}`},
		{NewAuthRequired(nil), `{"code":-32000,"message":"Authentication required"}`},
		{&RequestError{Code: 1, Message: "m"}, `{"code":1,"message":"m"}`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	// Data that cannot be marshalled falls back to plain text.
	if got := NewInternalError(make(chan int)).Error(); !strings.HasPrefix(got, "code -32603: Internal error (data: ") {
		t.Errorf("fallback Error() = %q", got)
	}
}

func TestRequestErrorUnwrap(t *testing.T) {
	var nilErr *RequestError
	if nilErr.Unwrap() != nil {
		t.Fatal("nil Unwrap")
	}
	if NewInternalError(nil).Unwrap() != nil {
		t.Fatal("plain errors have no cause")
	}
	open := &Connection{ctx: context.Background()}
	for _, err := range []error{open.peerDisconnected(textDisconnectedBeforeResponse), open.peerDisconnected(textDisconnectedDuringBarrier)} {
		if !errors.Is(err, ErrPeerDisconnected) {
			t.Fatalf("%v does not wrap ErrPeerDisconnected", err)
		}
		var re *RequestError
		if !errors.As(err, &re) || re.Code != -32603 {
			t.Fatalf("%v is not a -32603 RequestError", err)
		}
	}
	if got := open.peerDisconnected(textDisconnectedBeforeResponse).Error(); got != `{"code":-32603,"message":"Internal error","data":{"error":"peer disconnected before response"}}` {
		t.Fatalf("Error() = %s", got)
	}
}

func TestToRequestError(t *testing.T) {
	custom := NewAuthRequired(map[string]any{"hint": "login"})
	cases := []struct {
		in       error
		wantCode int
		wantData any
	}{
		{custom, -32000, custom.Data},
		{fmt.Errorf("wrapped: %w", custom), -32000, custom.Data},
		{context.Canceled, -32800, map[string]any{"error": "context canceled"}},
		{fmt.Errorf("stop: %w", context.Canceled), -32800, map[string]any{"error": "stop: context canceled"}},
		{context.DeadlineExceeded, -32603, map[string]any{"error": "context deadline exceeded"}},
		{errors.New("boom"), -32603, map[string]any{"error": "boom"}},
	}
	for _, c := range cases {
		got := toRequestError(c.in)
		if got.Code != c.wantCode || fmt.Sprint(got.Data) != fmt.Sprint(c.wantData) {
			t.Errorf("toRequestError(%v) = %v", c.in, got)
		}
	}
	if toRequestError(nil) != nil {
		t.Fatal("nil error must stay nil")
	}
	if toRequestError(custom) != custom {
		t.Fatal("a *RequestError must pass through unchanged")
	}
}
