//go:build cgo

package ledger

/*
void dg_wal_counts(long long *in, long long *out);
*/
import "C"

// One write per commit to the WAL (walwrite.c, the "dg-wal" VFS).
//
// SQLite appends a commit to the WAL a frame at a time, and each frame as
// two writes: its 24-byte header, then its page. On closed16/small a group
// commit wrote about 11 frames, 22 pwrite calls, and those calls were 19%
// of the writer's CPU (perf --call-graph dwarf on
// BenchmarkDecision/embedded/parallel8: the kernel's per-call work, not
// the bytes). The embedded ledger's connections open through a VFS that is
// SQLite's own for every file but the WAL, where it keeps a connection's
// contiguous writes in a buffer and makes them as one write when the
// commit's last frame is written: a frame whose header carries the
// database's size is a commit's, so the write of its page completes it.
//
// Why nothing changes but the number of calls:
//   - Other connections and processes find frames through the WAL index,
//     which SQLite updates only after the commit's writes return, by which
//     time they are in the file. Frames of a transaction still running are
//     read by no one else.
//   - Every other operation on the WAL (read, sync, truncate, size, close,
//     locks, file controls) makes the buffered writes first, so SQLite's
//     own reads and syncs see its writes, in its order; a write that does
//     not continue the buffer makes the buffer first too.
//   - A failed write fails the call that makes it: the commit's, or the
//     operation's that needed it. A process killed with frames in the
//     buffer loses only a commit that had not returned, as if killed
//     before its writes.
//   - No write is over 124 KB: SQLite's unix VFS writes at most 0x1ffff
//     bytes per call and reports the disk full for the rest, so a larger
//     commit goes out in pieces (TestWALCommitLargerThanOneWrite).
//   - After a commit's header, each write goes out at once, so the frames
//     SQLite adds after one with a sync (FULL, on a device without
//     powersafe overwrite) are never left behind.
// LIBSQL_URL's vfs parameter, when given, replaces it.

// walVFS reports whether the VFS is registered (init, embedded.go).
var walVFS bool

// walWrites returns how many writes SQLite asked of WAL files and how many
// reached them, since the process started.
func walWrites() (asked, made int64) {
	var in, out C.longlong
	C.dg_wal_counts(&in, &out)
	return int64(in), int64(out)
}
