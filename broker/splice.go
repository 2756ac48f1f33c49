package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/seglog/seglog/storage"
)

// Zero-copy fetch responses. A fetch handler builds its response with a
// 16-byte marker in place of each partition's record batches, and a
// spliced entry naming the file region to send there. writeSpliced
// encodes the response once, finds the markers in order, and sends the
// bytes between them with writev and each region with sendfile, after
// a length prefix of the region's size: the response's size is known
// before the first byte leaves, so no record byte passes through user
// space. The marker's first bytes cannot start a topic name (a 0xff and a
// 0x00 are outside [a-zA-Z0-9._-]) and the search for marker i starts
// after marker i-1, in the order kmsg encodes partitions, which is the
// order the handler added them.

// spliced is one region standing in for a partition's record batches.
type spliced struct {
	region *storage.Region
}

const markerLen = 16

var markerMagic = [12]byte{0xff, 0x00, 's', 'e', 'g', 'l', 'o', 'g', 0x00, 0xfe, 0x01, 0x7f}

// marker returns the placeholder of the i-th region.
func marker(i int) []byte {
	m := make([]byte, markerLen)
	copy(m, markerMagic[:])
	binary.BigEndian.PutUint32(m[12:], uint32(i))
	return m
}

// writeSpliced writes a response encoded with markers in b (whose first 4
// bytes are the size slot): compact (uvarint) length prefixes when
// flexible, int32 otherwise.
func (c *conn) writeSpliced(b []byte, regions []spliced, flexible bool) error {
	oldPrefix := 4
	if flexible {
		oldPrefix = 1 // uvarint(16+1)
	}
	prefixes := make([]byte, 0, 5*len(regions))
	type cut struct{ start, end int } // of the marker and its prefix in b
	cuts := make([]cut, len(regions))
	from := 4
	size := int64(len(b) - 4)
	for i, r := range regions {
		j := bytes.Index(b[from:], marker(i))
		if j < 0 || from+j-oldPrefix < from {
			return fmt.Errorf("fetch response: marker %d not found", i)
		}
		cuts[i] = cut{from + j - oldPrefix, from + j + markerLen}
		from = cuts[i].end
		n := r.region.Length
		before := len(prefixes)
		if flexible {
			prefixes = binary.AppendUvarint(prefixes, uint64(n)+1)
		} else {
			prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(n))
		}
		size += int64(len(prefixes)-before) + n - int64(oldPrefix+markerLen)
	}
	binary.BigEndian.PutUint32(b, uint32(size))
	pos, pfx := 0, 0
	for i, r := range regions {
		pl := 4
		if flexible {
			_, pl = binary.Uvarint(prefixes[pfx:])
		}
		bufs := net.Buffers{b[pos:cuts[i].start], prefixes[pfx : pfx+pl]}
		if _, err := bufs.WriteTo(c.nc); err != nil {
			return fmt.Errorf("write fetch response: %w", err)
		}
		pfx += pl
		n, err := r.region.WriteTo(progressConn{c})
		if err != nil || n != r.region.Length {
			return fmt.Errorf("send fetched records (%d of %d bytes sent): %w", n, r.region.Length, err)
		}
		pos = cuts[i].end
	}
	if _, err := c.nc.Write(b[pos:]); err != nil {
		return fmt.Errorf("write fetch response: %w", err)
	}
	return nil
}

// progressConn is the connection as a region's sender sees it: each time
// the socket takes bytes, the write deadline moves Options.IdleTimeout
// on, so that a response is cut when its client stops reading for the
// idle timeout, not when it reads the response slower than that (a
// consumer behind a slow link would get every big fetch cut, and retry
// it for ever). Sendfile goes through SyscallConn, a copy through Write.
type progressConn struct{ c *conn }

func (p progressConn) Write(b []byte) (int, error) {
	n, err := p.c.nc.Write(b)
	p.c.extendWriteDeadline()
	return n, err
}

func (p progressConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := p.c.nc.(syscall.Conn)
	if !ok {
		return nil, errors.New("broker: not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	return progressRawConn{rc, p.c}, nil
}

// progressRawConn moves the write deadline on each time the socket was
// writable (sendfile's loop runs in Write, waiting between its calls of
// f until the socket takes more).
type progressRawConn struct {
	syscall.RawConn
	c *conn
}

func (r progressRawConn) Write(f func(fd uintptr) bool) error {
	return r.RawConn.Write(func(fd uintptr) bool {
		done := f(fd)
		r.c.extendWriteDeadline()
		return done
	})
}
