package acp

// Writing: one writer goroutine, context-bounded sends and responses.

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// appendValue appends v as json.Marshal would encode it.
func (e *encodeBuffer) appendValue(v any) error {
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	e.buf.Truncate(e.buf.Len() - 1) // Encode's newline
	return nil
}

// writeJob is one line handed to the writer, with the channel (buffered,
// capacity 1) its result goes to.
type writeJob struct {
	line []byte
	done chan error
}

// write sends one complete line. It returns nil once the line is written,
// the write's error, ctx's error when ctx ends first, or ErrConnectionClosed
// after Close, whether the sender was still waiting for an earlier write or
// its own write was blocked on the peer. busy reports that the writer still
// holds line: the caller must then not reuse its memory.
func (c *Connection) write(ctx context.Context, line []byte) (busy bool, err error) {
	select {
	case c.writeSem <- struct{}{}:
	default:
		select {
		case c.writeSem <- struct{}{}:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-c.closed:
			return false, ErrConnectionClosed
		}
	}
	// writeSem is now ours; whoever writes the line releases it.
	if err := ctx.Err(); err != nil {
		<-c.writeSem
		return false, err
	}
	select {
	case <-c.closed:
		<-c.writeSem
		return false, ErrConnectionClosed
	default:
	}
	job := writeJob{line: line, done: c.free.getWriteResult()}
	select {
	case c.writeLine <- job:
	case <-c.ctx.Done():
		// The writer goroutine is gone with the connection; later writes
		// (as upstream, a notification is still attempted) each get one.
		go c.writeOne(job)
	}
	var gaveUp error
	select {
	case err := <-job.done:
		c.free.putWriteResult(job.done)
		return false, err
	case <-ctx.Done():
		gaveUp = ctx.Err()
	case <-c.closed:
		gaveUp = ErrConnectionClosed
	}
	select {
	case err := <-job.done: // finished meanwhile: report the write
		c.free.putWriteResult(job.done)
		return false, err
	default:
		return true, gaveUp
	}
}

// writeLoop writes the lines senders hand over until the connection ends.
func (c *Connection) writeLoop() {
	defer c.goroutineDone()
	for {
		select {
		case job := <-c.writeLine:
			c.writeOne(job)
		case <-c.ctx.Done():
			return
		}
	}
}

// writeOne writes one line for the sender holding writeSem, reports the
// result and releases writeSem.
func (c *Connection) writeOne(job writeJob) {
	_, err := c.w.Write(job.line)
	job.done <- err
	<-c.writeSem
}

// writeResponse sends the reply to an inbound request. A result that cannot
// be marshalled becomes -32603 (as upstream); so does an error whose data
// cannot be marshalled (upstream sends nothing, leaving the peer waiting).
func (c *Connection) writeResponse(rawID json.RawMessage, result any, rerr *RequestError) {
	e := c.free.getEncodeBuffer()
	for attempt := 0; ; attempt++ {
		e.buf.Reset()
		e.buf.WriteString(`{"jsonrpc":"2.0","id":`)
		e.buf.Write(appendRawID(e.buf.AvailableBuffer(), rawID))
		var err error
		if rerr != nil {
			e.buf.WriteString(`,"error":`)
			err = e.appendValue(rerr)
		} else {
			e.buf.WriteString(`,"result":`)
			err = c.appendResult(e, result)
		}
		if err != nil && attempt == 0 {
			rerr = NewInternalError(errorData(err.Error()))
			continue
		}
		if err != nil {
			c.free.putEncodeBuffer(e)
			c.log().Error("failed to encode response", "err", err)
			return
		}
		break
	}
	e.buf.WriteString("}\n")
	c.sendLine(context.Background(), e, "failed to write response")
}

// sendLine writes the line laid out in e and recycles e unless the writer
// still holds it; a failure is logged at Debug with msg.
func (c *Connection) sendLine(ctx context.Context, e *encodeBuffer, msg string) error {
	busy, err := c.write(ctx, e.buf.Bytes())
	if !busy {
		c.free.putEncodeBuffer(e)
	}
	if err != nil && msg != "" {
		c.log().Debug(msg, "err", err)
	}
	return err
}

// appendResult marshals a handler result, recovering a panicking
// MarshalJSON.
func (c *Connection) appendResult(e *encodeBuffer, result any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log().Error("panic while encoding result", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic while encoding result: %v", p)
		}
	}()
	return e.appendValue(result)
}

// encodeMessage lays out a request (id > 0) or notification envelope.
func encodeMessage(e *encodeBuffer, id uint64, method string, params any) error {
	e.buf.WriteString(`{"jsonrpc":"2.0"`)
	if id != 0 {
		e.buf.WriteString(`,"id":`)
		e.buf.Write(appendUintID(e.buf.AvailableBuffer(), id))
	}
	if method != "" {
		e.buf.WriteString(`,"method":`)
		e.buf.Write(appendJSONString(e.buf.AvailableBuffer(), method))
	}
	if params != nil {
		e.buf.WriteString(`,"params":`)
		if err := e.appendValue(params); err != nil {
			return err
		}
	}
	e.buf.WriteString("}\n")
	return nil
}
