package segment

// MaxRecordOverhead is the most the v2 batch format adds to one record
// besides its key, value and headers: the record's length, attributes,
// timestamp delta, offset delta, key length, value length and header
// count, each at its largest varint size. A writer that caps its batches
// by bytes counts each record as its key and value bytes plus this.
const MaxRecordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5

// MaxRecordBytes is the most key and value bytes one record without
// headers can hold in a batch of its own under these limits (before
// compression).
func (l Limits) MaxRecordBytes() int {
	return l.withDefaults().MaxBatchBytes - HeaderSize - MaxRecordOverhead
}
