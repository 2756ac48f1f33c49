package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"

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
		n, err := r.region.WriteTo(c.nc)
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
