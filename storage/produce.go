package storage

import (
	"fmt"
)

// AnyPartition asks ProduceTo to choose each record's partition as
// Produce does.
const AnyPartition int32 = -1

// Produced says where a produced record went.
type Produced struct {
	Partition int32
	Offset    int64
}

// Appended is the part of a produce call that went to one partition: its
// records took the offsets from FirstOffset on.
type Appended struct {
	Partition   int32
	FirstOffset int64
	Records     int
}

// A ProduceError is a produce call whose append to one partition failed.
// The records of the partitions in Appended were appended before it, and
// those of the failed partition and of the partitions after it were not.
type ProduceError struct {
	Partition int32      // the partition whose append failed
	Records   int        // the call's records for that partition
	Appended  []Appended // the partitions appended before, in order
	Err       error      // why the append failed
}

// Error says which partition's append failed and why.
func (e *ProduceError) Error() string {
	return fmt.Sprintf("produce to partition %d (%d records): %v", e.Partition, e.Records, e.Err)
}

// Unwrap returns why the append failed.
func (e *ProduceError) Unwrap() error { return e.Err }

// Produce appends records to a topic, choosing each record's partition as
// Partition does, except that the keyless records of one call all go to
// one partition (sticky per call, round-robin across calls), so they form
// one batch. Records for one partition are appended as one batch, the
// partitions in the order of their first record; each record's Timestamp
// is set to the one stored. The result is in the order of recs. When an
// append fails after others succeeded, the error is a *ProduceError that
// says which partitions took their records.
func (s *Store) Produce(topic string, recs ...Record) ([]Produced, error) {
	return s.ProduceTo(topic, AnyPartition, recs...)
}

// ProduceTo is Produce with every record appended to one partition, as
// one batch; AnyPartition routes them as Produce does.
func (s *Store) ProduceTo(topic string, partition int32, recs ...Record) ([]Produced, error) {
	n, err := s.Partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make([]Produced, len(recs))
	sticky := int32(-1)
	groups := map[int32][]int{}
	var order []int32
	for i := range recs {
		p := partition
		switch {
		case p != AnyPartition:
		case recs[i].Key != nil:
			p = s.partitionFor(recs[i].Key, n)
		default:
			if sticky < 0 {
				sticky = s.partitionFor(nil, n)
			}
			p = sticky
		}
		if _, ok := groups[p]; !ok {
			order = append(order, p)
		}
		groups[p] = append(groups[p], i)
	}
	batch := make([]Record, 0, len(recs))
	var done []Appended
	for _, p := range order {
		batch = batch[:0]
		for _, i := range groups[p] {
			batch = append(batch, recs[i])
		}
		l, err := s.Log(topic, p)
		var res AppendResult
		if err == nil {
			res, err = l.Append(batch...)
		}
		if err != nil {
			return nil, &ProduceError{Partition: p, Records: len(batch), Appended: done, Err: err}
		}
		for j, i := range groups[p] {
			recs[i].Timestamp = batch[j].Timestamp
			out[i] = Produced{Partition: p, Offset: res.FirstOffset + int64(j)}
		}
		done = append(done, Appended{Partition: p, FirstOffset: res.FirstOffset, Records: len(batch)})
	}
	return out, nil
}
