// Package metrics exposes a seglog data directory to Prometheus. It owns
// the Collector (a prometheus.Collector over a storage.Store and,
// optionally, an offsets.Store and a retention.Cleaner), the fsync latency
// histogram that storage.Options.OnFsync feeds (FsyncHistogram),
// WriteText, which prints what collectors collect in the Prometheus text
// format (seglog metrics), and Endpoint, which answers scrapes over HTTP.
// It owns no file and changes nothing: a scrape only reads counters the
// engine keeps, so the engine packages stay free of the Prometheus
// dependency.
//
// # Wiring
//
// The fsync histogram has to exist before the store opens its logs, since
// each log calls Options.OnFsync after every fsync of a segment file:
//
//	fsync := metrics.NewFsyncHistogram(nil) // default buckets, 50µs to 0.8s
//	st, err := storage.OpenStore(root, storage.StoreOptions{
//		Log: storage.Options{OnFsync: fsync.Observe},
//	})
//	ost, err := offsets.Open(offsets.Dir(root), offsets.Options{})
//	cl, err := retention.New(st, ost, retention.Options{...})
//	prometheus.MustRegister(metrics.New(st, metrics.Options{
//		Offsets: ost, Cleaner: cl, Fsync: fsync,
//	}))
//
// Offsets, Cleaner and Fsync may each be nil: their metrics are then left
// out. A process without an HTTP server of its own answers scrapes with
// an Endpoint (Listen, then Serve until Close), as seglog serve --metrics
// does. To tell two stores of one process apart, register each collector
// through prometheus.WrapRegistererWith with a label of your own.
//
// # What a scrape reads
//
// A scrape never opens a partition. Per-partition metrics cover the logs
// that are open now (storage.Store.OpenPartitions: a Store opens a log on
// its first use and keeps it open until Close or DeleteTopic), each read
// by storage.Log.Stats and storage.Log.OpenStats: atomic loads, plus an
// lstat of a segment whose size is not known yet. Counters (the _total
// metrics) count since the log was opened, so they restart at zero when a
// process restarts or a topic is deleted and made again; Prometheus's
// rate() handles such resets.
//
// A group's committed offset (seglog_group_committed_offset) is exported
// for every durable position of the offsets store; its lag
// (seglog_group_lag = log end offset − committed offset, 0 when the
// committed offset is past the end) only where the partition's log is
// open, since the end offset of a log that is not open is not known
// without opening it. The offsets store's reads follow its journal (one
// fstat each): a scrape costs one fstat per group, plus two.
//
// # Metrics
//
// Per open partition, labels topic and partition:
//
//	seglog_log_start_offset             gauge    first readable offset
//	seglog_log_end_offset               gauge    offset the next record gets
//	seglog_log_flushed_offset           gauge    offsets below it are fsynced
//	seglog_log_segments                 gauge    segments
//	seglog_log_size_bytes               gauge    bytes of the .log files
//	seglog_appended_batches_total       counter  batches appended
//	seglog_appended_records_total       counter  records appended
//	seglog_appended_bytes_total         counter  bytes of the batches appended
//	seglog_fsyncs_total                 counter  fsyncs of segment files
//	seglog_fsync_seconds_total          counter  time spent in them
//	seglog_read_bytes_total             counter  bytes of batches returned by reads (not zero-copy regions)
//	seglog_log_open_seconds             gauge    how long Open took, recovery included
//	seglog_log_open_clean               gauge    1 when the log had been closed cleanly (read-only opens: 0)
//	seglog_log_recovered_segments       gauge    segments Open rescanned
//	seglog_log_recovered_bytes          gauge    bytes Open rescanned
//	seglog_log_truncated_bytes          gauge    bytes Open cut at the first invalid batch
//
// Appends per fsync (group commit at work) is a ratio of two counters,
// left to PromQL:
//
//	sum by (topic) (rate(seglog_appended_batches_total[5m]))
//	  / sum by (topic) (rate(seglog_fsyncs_total[5m]))
//
// The store:
//
//	seglog_topics                       gauge    topics
//	seglog_open_partitions              gauge    partitions whose log is open
//	seglog_open_files                   gauge    files segments hold open (as many memory maps)
//	seglog_fsync_duration_seconds       histogram  latency of each segment fsync (with Options.Fsync)
//
// The offsets store (with Options.Offsets):
//
//	seglog_group_committed_offset       gauge    labels group, topic, partition
//	seglog_group_lag                    gauge    labels group, topic, partition; open partitions only
//	seglog_offsets_groups               gauge    groups
//	seglog_offsets_positions            gauge    committed positions
//	seglog_offsets_journal_bytes        gauge    size of the journal
//	seglog_offsets_dropped_bytes        gauge    bytes cut from (read-only: found past) journal tails
//	seglog_offsets_journal_records_total counter journal records this store appended
//	seglog_offsets_tailed_records_total counter  journal records of other stores this store read
//	seglog_offsets_reloads_total        counter  rereads of the directory after another store compacted
//	seglog_offsets_fsyncs_total         counter  fsyncs of the journal
//	seglog_offsets_compactions_total    counter  compactions
//	seglog_offsets_compaction_failing   gauge    1 while the last compaction failed
//	seglog_offsets_refresh_failing      gauge    1 while following the journal fails
//
// The retention cleaner (with Options.Cleaner):
//
//	seglog_retention_runs_total                  counter  runs, dry runs included
//	seglog_retention_dry_runs_total              counter  dry runs
//	seglog_retention_deleted_segments_total      counter  segments deleted
//	seglog_retention_deleted_bytes_total         counter  their bytes
//	seglog_retention_failures_total              counter  partitions a run could not clean
//	seglog_retention_last_run_timestamp_seconds  gauge    when the last run started (absent before the first)
//	seglog_retention_last_run_duration_seconds   gauge    how long it took
package metrics
