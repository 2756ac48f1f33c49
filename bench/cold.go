package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/seglog/seglog/storage"
)

// coldOpens opens the closed log in dir n times, each time after dropping
// its files from the page cache (as after a reboot; other processes' pages
// stay), and reads one record at a random offset just after: it returns
// the histograms of the opens and of those first reads. ok is false where
// files cannot be dropped from the page cache (not Linux).
func coldOpens(dir string, opts storage.Options, n int) (open, firstRead *Histogram, ok bool, err error) {
	open, firstRead = NewHistogram(), NewHistogram()
	rng := rand.New(rand.NewPCG(7, 7))
	var buf []byte
	for range n {
		if ok, err = dropFromPageCache(dir); !ok || err != nil {
			return nil, nil, ok, err
		}
		t := time.Now()
		l, err := storage.Open(dir, opts)
		if err != nil {
			return nil, nil, true, err
		}
		t1 := time.Now()
		open.Record(t1.Sub(t))
		off := l.StartOffset() + rng.Int64N(l.EndOffset()-l.StartOffset())
		_, buf, err = l.ReadRecord(buf[:0], off)
		firstRead.Record(time.Since(t1))
		if cerr := l.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, nil, true, fmt.Errorf("bench: cold open of %s: %w", dir, err)
		}
	}
	return open, firstRead, true, nil
}
