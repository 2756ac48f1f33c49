package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch compression codec. The values are Kafka's, stored in
// bits 0-2 of a v2 batch's attributes.
type Codec uint8

// The codecs. Only the records section of a batch is compressed.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2 // written as a raw block; xerial framing is read too
	CodecLZ4    Codec = 3 // LZ4 frame format
	CodecZstd   Codec = 4
	// CodecS2 is read in version-1 batches only: it is not a Kafka codec,
	// and no v2 batch uses it. It has no number in a v2 header.
	CodecS2 Codec = 8
)

// Codec numbers of version-1 batches that differ from Kafka's.
const (
	v1CodecZstd = 3
	v1CodecS2   = 4
)

// codecFromV1 maps a version-1 batch's codec number to its Codec.
func codecFromV1(c Codec) Codec {
	switch c {
	case v1CodecZstd:
		return CodecZstd
	case v1CodecS2:
		return CodecS2
	}
	return c
}

var codecNames = map[Codec]string{CodecNone: "none", CodecGzip: "gzip", CodecSnappy: "snappy", CodecLZ4: "lz4", CodecZstd: "zstd", CodecS2: "s2"}

// String returns the codec's name: none, gzip, snappy, lz4, zstd (or s2,
// read in version-1 batches).
func (c Codec) String() string {
	if n, ok := codecNames[c]; ok {
		return n
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// CodecNames lists the names ParseCodec takes, in codec order: none,
// gzip, snappy, lz4, zstd.
func CodecNames() []string {
	var names []string
	for c := CodecNone; c <= CodecZstd; c++ {
		names = append(names, codecNames[c])
	}
	return names
}

// ParseCodec returns the codec with the given name, one that a v2 batch
// can be written with: none, gzip, snappy, lz4 or zstd.
func ParseCodec(name string) (Codec, error) {
	for c := CodecNone; c <= CodecZstd; c++ {
		if codecNames[c] == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("segment: unknown codec %q (want none, gzip, snappy, lz4 or zstd)", name)
}

// Buffers and encoders are pooled: nothing is created per batch.
var (
	bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	gzipReaders sync.Pool // *gzip.Reader; New cannot be used: NewReader needs input

	// LZ4 frames as Kafka's Java client writes them: 64 KiB independent
	// blocks, no content checksum (the batch's CRC covers the bytes).
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false), lz4.ConcurrencyOption(1)); err != nil {
			panic(err) // only for invalid options, which are fixed here
		}
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

	// zstd at its fastest level: an append path wants throughput (2.7x
	// the default level's in BenchmarkEncode/zstd), and the batches of a
	// log compress nearly as well at it; a consumer decodes either level
	// at the same speed. Without the frame's content checksum: the batch's
	// own checksum already covers the compressed bytes, and the frame's
	// (an xxhash64 of the uncompressed records) cost the encoder and every
	// decoder a second pass over them.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
		if err != nil {
			panic(err) // only for invalid options, which are fixed here
		}
		return e
	})

	zstdMu       sync.Mutex
	zstdDecoders = map[int]*sync.Pool{} // of streaming *zstd.Decoder, by output limit
)

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { *b = (*b)[:0]; bufPool.Put(b) }

// zstdDecoders hands out streaming decoders whose window is capped by the
// output limit. Streaming (rather than DecodeAll) bounds the memory a
// hostile frame can make the decoder allocate to about the limit.
func zstdDecoderPool(limit int) *sync.Pool {
	zstdMu.Lock()
	defer zstdMu.Unlock()
	if p, ok := zstdDecoders[limit]; ok {
		return p
	}
	p := &sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)+1),
			zstd.WithDecoderMaxWindow(uint64(max(limit, zstd.MinWindowSize))))
		if err != nil {
			return err
		}
		return d
	}}
	zstdDecoders[limit] = p
	return p
}

// compress appends the compressed form of src to dst.
func compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecGzip:
		return compressStream(&gzipWriters, dst, src)
	case CodecSnappy:
		return encodeBlock(dst, src, "snappy", snappy.MaxEncodedLen, snappy.Encode)
	case CodecLZ4:
		return compressStream(&lz4Writers, dst, src)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: unknown codec %d", ErrInvalid, c)
}

// streamWriter is a pooled compressing writer: gzip's or lz4's.
type streamWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compressStream appends src compressed by a writer from pool to dst.
func compressStream(pool *sync.Pool, dst, src []byte) ([]byte, error) {
	w := pool.Get().(streamWriter)
	defer pool.Put(w)
	buf := bytes.NewBuffer(dst)
	w.Reset(buf)
	_, err := w.Write(src)
	if err == nil {
		err = w.Close()
	}
	return buf.Bytes(), err
}

// encodeBlock appends src in a block format (snappy's or s2's, named name)
// to dst: encode writes at most maxLen(len(src)) bytes, or maxLen is
// negative when src is too large for the format.
func encodeBlock(dst, src []byte, name string, maxLen func(int) int, encode func(dst, src []byte) []byte) ([]byte, error) {
	n := maxLen(len(src))
	if n < 0 {
		return dst, fmt.Errorf("%w: %d bytes too large for %s", ErrInvalid, len(src), name)
	}
	start := len(dst)
	dst = grow(dst, n)
	out := encode(dst[start:], src)
	return dst[:start+len(out)], nil
}

// errDecompress is wrapped by what decompress reports about bytes that do
// not decompress; the caller adds whose bytes they are (ErrCorrupt or
// ErrInvalid).
var errDecompress = errors.New("records do not decompress")

// decompress appends the decompressed form of src to dst[:0], refusing to
// produce more than limit bytes. Its errors wrap errDecompress, or
// ErrTooLarge at the limit.
func decompress(c Codec, dst, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	tooLarge := func(n int) error {
		return fmt.Errorf("%w: records expand to %d bytes, over the limit of %d", ErrTooLarge, n, limit)
	}
	bad := func(err error) error { return fmt.Errorf("%w: %s: %v", errDecompress, c, err) }
	// readAll reads r to its end, at most limit bytes.
	readAll := func(r io.Reader) ([]byte, error) {
		buf := bytes.NewBuffer(dst)
		n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
		if err != nil {
			return dst, bad(err)
		}
		if n > int64(limit) {
			return dst, tooLarge(int(n))
		}
		return buf.Bytes(), nil
	}
	switch c {
	case CodecGzip:
		var zr *gzip.Reader
		if v := gzipReaders.Get(); v != nil {
			zr = v.(*gzip.Reader)
			if err := zr.Reset(bytes.NewReader(src)); err != nil {
				return dst, bad(err)
			}
		} else {
			var err error
			if zr, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
				return dst, bad(err)
			}
		}
		defer gzipReaders.Put(zr)
		zr.Multistream(false)
		return readAll(zr)
	case CodecSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			return decodeXerial(dst, src, limit)
		}
		return decodeBlock(dst, src, limit, c)
	case CodecS2:
		return decodeBlock(dst, src, limit, c)
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		return readAll(r)
	case CodecZstd:
		pool := zstdDecoderPool(limit)
		v := pool.Get()
		d, ok := v.(*zstd.Decoder)
		if !ok {
			return dst, fmt.Errorf("segment: zstd decoder: %v", v)
		}
		defer pool.Put(d)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return dst, bad(err)
		}
		buf := bytes.NewBuffer(dst)
		n, err := buf.ReadFrom(io.LimitReader(d, int64(limit)+1))
		if err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return dst, tooLarge(limit + 1)
			}
			return dst, bad(err)
		}
		if n > int64(limit) {
			return dst, tooLarge(int(n))
		}
		return buf.Bytes(), nil
	}
	return dst, fmt.Errorf("%w: unknown codec %d", errDecompress, c)
}

// decodeBlock appends the decoded snappy (or s2) block src to dst, at most
// limit bytes.
func decodeBlock(dst, src []byte, limit int, c Codec) ([]byte, error) {
	decodedLen, decode := snappy.DecodedLen, snappy.Decode
	if c == CodecS2 {
		decodedLen, decode = s2.DecodedLen, s2.Decode
	}
	n, err := decodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("%w: %s: %v", errDecompress, c, err)
	}
	if n > limit-len(dst) {
		return dst, fmt.Errorf("%w: records expand to more than the limit of %d bytes", ErrTooLarge, limit)
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := decode(dst[start:], src)
	if err != nil || len(out) != n {
		return dst[:start], fmt.Errorf("%w: %s: %v", errDecompress, c, err)
	}
	return dst, nil
}

// xerialMagic starts the snappy framing of the xerial library, which
// Kafka's Java client writes: the magic, a version and a compatible
// version (int32 each), then chunks of a 4-byte big-endian length and a
// raw snappy block.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderSize = 16

// decodeXerial appends the decoded chunks of the xerial-framed src to dst,
// at most limit bytes.
func decodeXerial(dst, src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize {
		return dst, fmt.Errorf("%w: snappy: xerial header of %d bytes", errDecompress, len(src))
	}
	src = src[xerialHeaderSize:]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst, fmt.Errorf("%w: snappy: xerial chunk length cut short", errDecompress)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst, fmt.Errorf("%w: snappy: xerial chunk of %d bytes, %d remain", errDecompress, n, len(src))
		}
		var err error
		if dst, err = decodeBlock(dst, src[:n], limit, CodecSnappy); err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}
