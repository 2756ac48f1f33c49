// Package hardening holds seglog's hardening tests: they drive storage,
// offsets and the seglog command through their public APIs over a
// fault-injecting filesystem (vfs/faultfs) and with hostile input,
// and fail if the engine's behaviour under faults regresses.
//
// The package has no non-test code. What the tests cover:
//
//   - fault sweep: every filesystem call of a storage workload (open, append
//     with rolls, sync, truncate, delete from the front, close) fails once;
//     the error names what failed, the log stays readable and consistent,
//     nothing acknowledged is lost, and appends continue or a reopen
//     recovers with dense offsets;
//   - fsync failure (the log refuses writes with storage.ErrFailed until
//     reopened), full disk (storage.ErrDiskFull on write, index allocation
//     and fsync; deletion and reopen while new files cannot be created),
//     short writes, failing renames and directory fsyncs of checkpoints;
//   - hostile input: topic names, batches with huge length fields,
//     decompression bombs, damaged indexes, misnamed segment files, bogus
//     recovery points, symbolic links, and the dump and verify commands on
//     hostile files;
//   - resource limits (open files of a Store) and file permissions.
//
// "Acknowledged" means an append returned nil and a later Sync (or Close)
// returned nil.
package hardening
