// Package broker is seglog's Kafka-protocol server: one broker (node 0 of
// a one-node cluster, leader of every partition) that serves Kafka
// clients from a storage.Store, with consumer groups' commits in an
// offsets.Store. `seglog serve` runs it, with its retention cleaner
// (Options.Retention: a cleaner the server starts in New and stops in
// Shutdown and Close) and, beside it in that process, the metrics
// endpoint. Run serves a listener until a context ends and then shuts
// the server down gracefully.
//
// # What it owns
//
//   - the connections: Kafka's framing, one request at a time per
//     connection with responses in request order, the request size limit,
//     idle timeouts (conn.go), the buffers requests are read into, reused
//     from one produce request to the next within a bound (buffers.go),
//     and zero-copy fetch responses, whose record bytes go from the
//     segment file to the socket with sendfile (splice.go);
//   - one handler per API, each in a file named after it (produce.go,
//     fetch.go, list_offsets.go, metadata.go, ...), over wire structs from
//     github.com/twmb/franz-go/pkg/kmsg: nothing of the protocol is
//     hand-written but the request header;
//   - the one table from engine errors to Kafka error codes (errors.go);
//   - the group coordinator, Kafka's classic group protocol, with its
//     state machine drawn in groups.go and driven by the handlers of
//     JoinGroup, SyncGroup, Heartbeat and LeaveGroup;
//   - the cluster's identity in the data directory (cluster.go): the
//     cluster id and node id in meta.properties, a topic id persisted in
//     each partition directory (partition.metadata), producer ids handed
//     out in durable blocks. Formats as Kafka writes them.
//
// The record batches themselves are the engine's: Produce hands a
// client's batch to Log.AppendBatch as it came, Fetch sends the stored
// bytes back; idempotent producers are checked by the log's producer
// state.
//
// # API versions advertised
//
//	Produce 3-11, Fetch 4-16, ListOffsets 1-6, Metadata 0-12,
//	OffsetCommit 0-8, OffsetFetch 0-8, FindCoordinator 0-4,
//	JoinGroup 0-9, Heartbeat 0-4, LeaveGroup 0-5, SyncGroup 0-5,
//	DescribeGroups 0-5, ListGroups 0-4, ApiVersions 0-3,
//	CreateTopics 0-7, DeleteTopics 0-6, InitProducerId 0-4,
//	DescribeConfigs 0-4
//
// Why these: the lower ends are what the clients in use need. Kafka
// 4.x's Java clients start at the versions Kafka 4.0 kept (Produce 3,
// Fetch 4, ListOffsets 1, JoinGroup 2, OffsetCommit 2, ...) and use the
// highest version both sides have. librdkafka 2.x turns a feature on only
// when the broker's range overlaps the exact versions it checks, and
// Debian's librdkafka 2.0.2 predates Kafka 4.0: its balanced consumer
// (consumer groups) needs FindCoordinator 0, OffsetCommit 1-2,
// OffsetFetch 1, JoinGroup 0, SyncGroup 0, Heartbeat 0 and LeaveGroup 0;
// its v2 record batches need Produce 3 and Fetch 4; zstd needs Produce 7
// and Fetch 10; timestamps in ListOffsets need version 1; idempotence
// InitProducerId 0. So the group APIs start at 0 here, where Kafka 4
// starts higher. franz-go negotiates anything in range. The upper ends
// stop before what the server does not do: Produce 12 and OffsetCommit
// and OffsetFetch 9 belong to the next-generation group and transaction
// protocols, ListOffsets 7 asks for the largest timestamp. Topic ids are
// served, so Fetch goes to 16 and Metadata to 12 (topics named by id).
//
// # Not served
//
// Transactions: InitProducerId with a transactional id, FindCoordinator
// for a transaction coordinator and a transactional produce are answered
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the transaction APIs are not
// advertised. Fetch sessions: every fetch is a full one (session id 0).
// Static group membership, SASL, TLS, ACLs, quotas, the next-generation
// consumer group protocol, log compaction.
//
// # Errors
//
// An unknown topic is UNKNOWN_TOPIC_OR_PARTITION (or, named by id,
// UNKNOWN_TOPIC_ID); an engine error maps through errors.go. A request
// for an API or version not served is answered as Kafka answers it: an
// ApiVersions request with UNSUPPORTED_VERSION and the ranges served,
// anything else by closing the connection (the request cannot be parsed
// into a response of its kind). A request over the size limit closes the
// connection before its body is read, as Kafka does. A produced batch
// is checked whole, every record decoded, before the log stores it: one
// whose CRC does not match is CORRUPT_MESSAGE, anything else that is not
// one well-formed RecordBatch v2 INVALID_RECORD (produce.go). Every
// closed connection is logged with the reason.
package broker
