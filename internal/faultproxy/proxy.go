// Package faultproxy is a loopback TCP proxy for tests that injects the
// faults a database server or its network can show: a stall (connections
// stay open and nothing is forwarded, as a hung server or a dead link
// looks) and a cut (every connection closed, new ones closed at once, as a
// restarting server looks). Restore forwards again.
package faultproxy

import (
	"net"
	"sync"
)

// Mode is what the proxy does with traffic.
type Mode int

// The proxy's modes.
const (
	// Forward passes bytes both ways.
	Forward Mode = iota
	// Stall holds every connection open and forwards nothing.
	Stall
	// Cut closes every connection and accepts new ones only to close them.
	Cut
)

// Proxy forwards connections from its loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	mode    Mode
	changed chan struct{} // closed and replaced on every mode change
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Start listens on 127.0.0.1 (a free port) and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the mode; Cut closes every open connection at once.
func (p *Proxy) Set(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	close(p.changed)
	p.changed = make(chan struct{})
	if m == Cut {
		for c := range p.conns {
			c.Close()
		}
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track adds c to the open connections; false when it must close at once.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.mode == Cut {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		client.Close()
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		server.Close()
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.pump(server, client); done <- struct{}{} }()
	go func() { p.pump(client, server); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

// pump copies src to dst while the mode lets it: a stall holds each chunk
// until the mode changes; a cut or Close ends it.
func (p *Proxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed connection
			return
		}
	}
}

// wait blocks while the proxy stalls; it reports whether to forward.
func (p *Proxy) wait() bool {
	for {
		p.mu.Lock()
		mode, changed, closed := p.mode, p.changed, p.closed
		p.mu.Unlock()
		switch {
		case closed || mode == Cut:
			return false
		case mode == Forward:
			return true
		}
		<-changed
	}
}
