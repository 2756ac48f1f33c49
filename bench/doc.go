// Package bench owns seglog's benchmark workloads, their latency
// histograms and their reports: what `seglog bench` runs (cmd/seglog
// parses its flags into a Config and CommandOptions and calls RunCommand).
//
// # Workloads
//
// Each workload is a value with its parameters and a Run method that
// returns one Result per variant:
//
//   - Produce: appends from P goroutines to N partition logs, with a record
//     size, batch size, codec and sync policy, a number of records or a
//     duration; through Log.AppendBatch with batches the producer encoded
//     beforehand (the fast path: a broker appends a producer's request) or
//     through Log.Append (records in, encoding and compression timed).
//   - Consume: sequential reads from offset 0 of what a produce wrote, with
//     Log.ReadInto (whole batches, as a fetch) or a Reader (records).
//   - EndToEnd: producers and tailing consumers at once; the latency is
//     from the moment a batch was due to be appended (at the offered rate)
//     to the moment its consumer holds it.
//   - RandomRead: single records by random offset, with ReadInto and a
//     decode (random-read, one record per batch) or with Log.ReadRecord,
//     the point read (point-read, 100-record batches); both with the
//     process's RSS growth from before Open to after the reads.
//   - Durable: sync-on-every-append from 1 and N goroutines (group commit).
//   - DurableSync: appends without a sync policy and an explicit Log.Sync
//     after every batch of 10 records, as a broker acknowledging each
//     request; the latency of one Sync and the fsyncs each Sync costs.
//   - Recovery: Open after a clean Close (1, 100, 1000 segments) and after
//     a crash (a copy of the files taken before Close, fully rescanned).
//   - Offsets: consumer-offset commits, durable and not.
//
// Suite lists the workloads of a run and Run runs them in a temporary
// directory, removed afterwards unless Config.Keep.
//
// # Reading the figures
//
// Throughput counts payload: records, and the bytes of their values (MB is
// 10^6 bytes). Batch headers, record framing and indexes are overhead the
// engine pays out of the same time; "disk/payload" shows how much.
// Latency percentiles (p50, p99, p99.9, and the exact max) come from an
// HDR histogram of one operation, named in the report ("latency of ...");
// they are within 0.1%.
//
// Every throughput that has a plain-file equivalent is shown beside a
// baseline measured in the same run, in the same directory: a sequential
// write of the same bytes with the same write size (and an fsync where the
// workload fsyncs), a sequential read, random preads, or write+fsync (or
// fdatasync) in a loop. "vs base" is the workload's throughput over the baseline's, so a
// figure means the same on a laptop and on a server: 100% is as fast as
// the disk and page cache allow with plain files. The write and read
// baselines are measured twice and the faster counts. On a shared machine
// (other processes, two cores) absolute figures move between runs;
// compare within one run.
//
// Reads come from the page cache (the data was just written), so consume,
// random-read and point-read measure the engine's read path, not the disk.
// Peak RSS is the process's high-water mark while the workload ran (VmHWM,
// reset before each workload through /proc/self/clear_refs; getrusage's
// maxrss elsewhere, which is the peak of the whole process). A random
// read's RSS growth is VmRSS after the reads minus VmRSS before Open, with its
// file-backed part (pages of mapped segment files) apart from the
// anonymous one.
//
// The report ends with the targets, where the suite measures them: figures
// the engine is designed to reach on a typical server (appending 1 KiB
// records at 2 GB/s, a random read under a microsecond, ...), each said
// met or NOT MET with the measured value. A target missed on a laptop or a
// shared VM is no error; "vs base" is what compares this engine with this
// disk. The default suite uses smaller sizes than the targets state (see
// the report's notes); --full uses the stated sizes. The table report
// fits in 100 columns.
package bench
