// Package consumer reads a topic of a seglog data directory as a
// consumer, in a process of its own beside the one that writes it (a
// producer, a broker): it owns group consumption of a data directory by
// processes without a broker, the partition leases those processes take
// on the data directory (and take over when a process exits or is
// killed), the positions a reader starts from, and a group's lag.
//
// A Consumer (Open) reads a topic's partitions through read-only
// followers (storage.Store.Follower) and, with a group, starts each
// partition at the group's committed offset and commits in the data
// directory's offset store (package offsets) what the caller has handled
// (Commit). The processes of one group reading all partitions split them
// with leases: flocks under DIR/consumer-leases, one per live process and
// one per partition read, looked at every quarter of a second, so that
// the others take over the partitions of a process that exits or is
// killed, from the group's committed offsets (at least once). While a
// broker serves the directory and has announced its Kafka listener
// (AnnounceBroker), a group over all partitions joins through the broker
// instead, as a Kafka consumer of the group, so that these processes and
// any Kafka clients of the group share its partitions.
//
// Position says where a partition without a commit starts (earliest,
// latest, an offset, the last N records, a time); ParsePosition reads
// it from text. Lags lists a group's committed offsets against the logs,
// and PlanReset computes where a reset of a group's offsets moves each
// partition.
package consumer
