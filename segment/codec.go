package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Codec is a batch compression codec. The values are stored on disk.
type Codec uint8

// The codecs. Only the records section of a batch is compressed.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecZstd   Codec = 3
	CodecS2     Codec = 4
)

var codecNames = [...]string{"none", "gzip", "snappy", "zstd", "s2"}

// String returns the codec's name: none, gzip, snappy, zstd or s2.
func (c Codec) String() string {
	if int(c) < len(codecNames) {
		return codecNames[c]
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// ParseCodec returns the codec with the given name.
func ParseCodec(name string) (Codec, error) {
	for i, n := range codecNames {
		if n == name {
			return Codec(i), nil
		}
	}
	return 0, fmt.Errorf("segment: unknown codec %q (want none, gzip, snappy, zstd or s2)", name)
}

// Buffers and encoders are pooled: nothing is created per batch.
var (
	bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	gzipReaders sync.Pool // *gzip.Reader; New cannot be used: NewReader needs input

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
		w := gzipWriters.Get().(*gzip.Writer)
		buf := bytes.NewBuffer(dst)
		w.Reset(buf)
		_, err := w.Write(src)
		if err == nil {
			err = w.Close()
		}
		gzipWriters.Put(w)
		return buf.Bytes(), err
	case CodecSnappy:
		return encodeBlock(dst, src, "snappy", snappy.MaxEncodedLen, snappy.Encode)
	case CodecS2:
		return encodeBlock(dst, src, "s2", s2.MaxEncodedLen, s2.Encode)
	case CodecZstd:
		return zstdEncoder().EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: unknown codec %d", ErrInvalid, c)
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

// decompress appends the decompressed form of src to dst[:0], refusing to
// produce more than limit bytes.
func decompress(c Codec, dst, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	tooLarge := func(n int) error {
		return fmt.Errorf("%w: %w: records expand to %d bytes, over the limit of %d", ErrCorrupt, ErrTooLarge, n, limit)
	}
	switch c {
	case CodecGzip:
		var zr *gzip.Reader
		if v := gzipReaders.Get(); v != nil {
			zr = v.(*gzip.Reader)
			if err := zr.Reset(bytes.NewReader(src)); err != nil {
				return dst, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
			}
		} else {
			var err error
			if zr, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
				return dst, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
			}
		}
		defer gzipReaders.Put(zr)
		zr.Multistream(false)
		buf := bytes.NewBuffer(dst)
		n, err := buf.ReadFrom(io.LimitReader(zr, int64(limit)+1))
		if err != nil {
			return dst, fmt.Errorf("%w: gzip: %v", ErrCorrupt, err)
		}
		if n > int64(limit) {
			return dst, tooLarge(int(n))
		}
		return buf.Bytes(), nil
	case CodecSnappy, CodecS2:
		decodedLen, decode := snappy.DecodedLen, snappy.Decode
		if c == CodecS2 {
			decodedLen, decode = s2.DecodedLen, s2.Decode
		}
		n, err := decodedLen(src)
		if err != nil {
			return dst, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
		}
		if n > limit {
			return dst, tooLarge(n)
		}
		if cap(dst) < n {
			dst = make([]byte, 0, n)
		}
		out, err := decode(dst[:n], src)
		if err != nil {
			return dst, fmt.Errorf("%w: %s: %v", ErrCorrupt, c, err)
		}
		return out, nil
	case CodecZstd:
		pool := zstdDecoderPool(limit)
		v := pool.Get()
		d, ok := v.(*zstd.Decoder)
		if !ok {
			return dst, fmt.Errorf("segment: zstd decoder: %v", v)
		}
		defer pool.Put(d)
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			return dst, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		buf := bytes.NewBuffer(dst)
		n, err := buf.ReadFrom(io.LimitReader(d, int64(limit)+1))
		if err != nil {
			if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
				return dst, tooLarge(limit + 1)
			}
			return dst, fmt.Errorf("%w: zstd: %v", ErrCorrupt, err)
		}
		if n > int64(limit) {
			return dst, tooLarge(int(n))
		}
		return buf.Bytes(), nil
	}
	return dst, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, c)
}
