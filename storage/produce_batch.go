package storage

import "github.com/seglog/seglog/segment"

// BatchLimits cap the batches a producer gathers before it appends each
// with one ProduceTo call: at most Records records and Bytes bytes, a
// batch counted as its header and the RecordBytes of each record. A
// batch always takes its first record, so that a record larger than
// Bytes goes alone (the log refuses it if it passes the engine's limit).
type BatchLimits struct {
	Records int // most records per batch; at least 1
	Bytes   int // most bytes per batch; at most segment.DefaultMaxBatchBytes
}

// RecordBytes is the most a record whose key, value and headers take n
// bytes adds to a batch: n and the record's framing at its largest
// (segment.MaxRecordOverhead).
func RecordBytes(n int) int { return n + segment.MaxRecordOverhead }

// Fits reports whether a batch of n records that take size bytes (the sum
// of their RecordBytes) can take add more records of addBytes bytes
// within l. An empty batch takes anything.
func (l BatchLimits) Fits(n, size, add, addBytes int) bool {
	return n == 0 || (n+add <= l.Records && segment.HeaderSize+size+addBytes <= l.Bytes)
}
