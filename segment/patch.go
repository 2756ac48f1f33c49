package segment

import "encoding/binary"

// SetBaseOffset patches the base offset of an encoded batch in place. The
// checksum does not cover it, so the batch stays valid.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetLeaderEpoch patches the partition leader epoch of an encoded batch in
// place. The checksum does not cover it.
func SetLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime stamps a v2 batch with the log's append time, as Kafka
// does for a topic whose timestamps are LogAppendTime: the timestamp type
// bit set and maxTimestamp = ts, then the CRC computed again (the one
// change inside the checksum the log ever makes). It returns the new
// header. b must be a whole v2 batch that h describes.
func SetLogAppendTime(b []byte, h Header, ts int64) Header {
	h.Attributes |= attrLogAppendTime
	h.MaxTimestamp = ts
	binary.BigEndian.PutUint16(b[offAttributesV2:], uint16(h.Attributes))
	binary.BigEndian.PutUint64(b[offAttributesV2+relMaxTime:], uint64(ts))
	h.Checksum = checksum(b, Version)
	binary.BigEndian.PutUint32(b[offChecksum:], uint32(h.Checksum))
	return h
}

// Stamp is what a log writes over a producer's header when it appends a
// batch: the partition leader epoch, and the append time of a log whose
// timestamps are LogAppendTime.
type Stamp struct {
	// LeaderEpoch replaces the producer's partitionLeaderEpoch; -1 keeps
	// it.
	LeaderEpoch int32
	// LogAppendTime stamps AppendTime (milliseconds since the Unix
	// epoch) as the batch's timestamp (SetLogAppendTime).
	LogAppendTime bool
	AppendTime    int64
}

// Place patches batch, whose header h the caller has verified, to be
// appended to s next: its base offset becomes NextOffset and st is stamped
// (the caller's slice is modified). Only the append time is covered by
// the checksum, which it then computes again. It returns the header of
// the patched batch, for Append.
func (s *Segment) Place(batch []byte, h Header, st Stamp) Header {
	if st.LeaderEpoch >= 0 && h.LeaderEpoch != st.LeaderEpoch {
		SetLeaderEpoch(batch, st.LeaderEpoch)
		h.LeaderEpoch = st.LeaderEpoch
	}
	h.BaseOffset = s.next.Load()
	SetBaseOffset(batch, h.BaseOffset)
	if st.LogAppendTime {
		h = SetLogAppendTime(batch, h, st.AppendTime)
	}
	return h
}
