package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback and returns its address.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, r *bufio.Reader, deadline time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(deadline))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err := r.ReadString('\n')
	return err
}

// Forward passes bytes, Stall holds them until Restore, Cut closes.
func TestModes(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if err := roundTrip(c, r, 5*time.Second); err != nil {
		t.Fatalf("forward: %v", err)
	}
	p.Set(Stall)
	if err := roundTrip(c, r, 200*time.Millisecond); err == nil {
		t.Fatal("a stalled proxy answered")
	}
	p.Set(Forward)
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.ReadString('\n'); err != nil { // the held ping arrives
		t.Fatalf("after restore: %v", err)
	}
	p.Set(Cut)
	if err := roundTrip(c, r, 5*time.Second); err == nil {
		t.Fatal("a cut connection still answers")
	}
	p.Set(Forward)
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := roundTrip(c2, bufio.NewReader(c2), 5*time.Second); err != nil {
		t.Fatalf("new connection after the cut: %v", err)
	}
}
