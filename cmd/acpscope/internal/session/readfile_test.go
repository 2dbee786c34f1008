package session

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// bigFile writes a file of n bytes made of repeated line into dir.
func bigFile(t testing.TB, dir, name string, n int, line string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	data := bytes.Repeat([]byte(line), n/len(line)+1)[:n]
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Reads cost about their size: a whole file about once its size, a
// line/limit window about the window (the file is streamed, not held).
func TestReadTextFileCostsAboutItsSize(t *testing.T) {
	root := t.TempDir()
	const size = 8 << 20
	p := bigFile(t, root, "big.txt", size, "0123456789abcdef0123456789abcdef0123456789abcdef012345678\n")
	c := &scopeClient{root: root}
	var whole acp.ReadTextFileResponse
	n := allocated(func() {
		var err error
		if whole, err = c.ReadTextFile(context.Background(), acp.ReadTextFileRequest{Path: p}); err != nil {
			t.Error(err)
		}
	})
	if len(whole.Content) != size {
		t.Fatalf("read %d bytes, want %d", len(whole.Content), size)
	}
	// About once the size (a little more, for other goroutines of the
	// test binary); reading by doubling and copying cost over 3×.
	if n > size*2 {
		t.Errorf("a whole read of %d bytes allocated %d bytes, want at most 2×", size, n)
	}
	line, limit := 1000, 2
	var window acp.ReadTextFileResponse
	n = allocated(func() {
		var err error
		if window, err = c.ReadTextFile(context.Background(), acp.ReadTextFileRequest{Path: p, Line: &line, Limit: &limit}); err != nil {
			t.Error(err)
		}
	})
	if window.Content != strings.Repeat("0123456789abcdef0123456789abcdef0123456789abcdef012345678\n", 2) {
		t.Fatalf("window = %q", window.Content)
	}
	if n > 4<<20 {
		t.Errorf("a two-line window of a %d-byte file allocated %d bytes, want under 4 MiB (the file is not held)", size, n)
	}
}

// A file whose answer would encode to far more than its size (control
// bytes become six-byte escapes) is refused instead of read and sent.
func TestReadTextFileRefusesAnAnswerOverTheFrameBound(t *testing.T) {
	root := t.TempDir()
	p := bigFile(t, root, "nul.bin", 16<<20, "\x00")
	c := &scopeClient{root: root}
	if _, err := c.ReadTextFile(context.Background(), acp.ReadTextFileRequest{Path: p}); err == nil || !strings.Contains(err.Error(), "JSON encoding") {
		t.Fatalf("16 MiB of NUL: err %v, want a refusal naming the JSON encoding", err)
	}
}

// BenchmarkReadTextFile measures one read of a 16 MiB text file, whole and
// as a window, and eight reads at once; B/op is the memory a read costs.
func BenchmarkReadTextFile(b *testing.B) {
	root := b.TempDir()
	const size = 16 << 20
	p := bigFile(b, root, "big.txt", size, "0123456789abcdef0123456789abcdef0123456789abcdef012345678\n")
	nul := bigFile(b, root, "nul.bin", size, "\x00")
	c := &scopeClient{root: root}
	ctx := context.Background()
	line, limit := 100000, 10
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("window", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p, Line: &line, Limit: &limit}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("nul-refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: nul})
		}
	})
	b.Run("eight-at-once", func(b *testing.B) {
		b.ReportAllocs()
		var peak uint64
		for b.Loop() {
			var wg sync.WaitGroup
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // sample the heap while the reads run
				defer close(done)
				var m runtime.MemStats
				for {
					runtime.ReadMemStats(&m)
					peak = max(peak, m.HeapInuse)
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				}
			}()
			for range 8 {
				wg.Go(func() { _, _ = c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p}) })
			}
			wg.Wait()
			close(stop)
			<-done
		}
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	})
}

// At most maxConcurrentReads reads run at once: with every slot taken, a
// read waits for one (here until its context ends) instead of starting.
func TestReadTextFileWaitsForASlot(t *testing.T) {
	root := t.TempDir()
	p := bigFile(t, root, "a.txt", 10, "line\n")
	for range maxConcurrentReads {
		readSlots <- struct{}{}
	}
	defer func() {
		for range maxConcurrentReads {
			<-readSlots
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &scopeClient{root: root}
	if _, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{Path: p}); err == nil {
		t.Fatal("a read started with every slot taken")
	}
}
