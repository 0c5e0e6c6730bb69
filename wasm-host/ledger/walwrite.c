//go:build cgo

// The "dg-wal" VFS: SQLite's own VFS for every file, except that a
// connection's writes to its WAL reach the kernel as one write per commit
// instead of two per page (a frame's 24-byte header, then its page). Why,
// and what makes it safe: walwrite.go.

#include <stdlib.h>
#include <string.h>

typedef long long i64;

// SQLite's VFS interface, as sqlite3.h declares it: the layout is the ABI
// (the VFS's members after xOpen are copied, never called, here).
typedef struct vfs_file vfs_file;
typedef struct vfs_methods vfs_methods;
typedef struct vfs vfs;

struct vfs_file {
	const vfs_methods *methods;
};

struct vfs_methods {
	int version;
	int (*close)(vfs_file *);
	int (*read)(vfs_file *, void *, int, i64);
	int (*write)(vfs_file *, const void *, int, i64);
	int (*truncate)(vfs_file *, i64);
	int (*sync)(vfs_file *, int);
	int (*file_size)(vfs_file *, i64 *);
	int (*lock)(vfs_file *, int);
	int (*unlock)(vfs_file *, int);
	int (*check_reserved_lock)(vfs_file *, int *);
	int (*file_control)(vfs_file *, int, void *);
	int (*sector_size)(vfs_file *);
	int (*device_characteristics)(vfs_file *);
	int (*shm_map)(vfs_file *, int, int, int, void volatile **);
	int (*shm_lock)(vfs_file *, int, int, int);
	void (*shm_barrier)(vfs_file *);
	int (*shm_unmap)(vfs_file *, int);
	int (*fetch)(vfs_file *, i64, int, void **);
	int (*unfetch)(vfs_file *, i64, void *);
};

struct vfs {
	int version;
	int file_size;
	int max_pathname;
	vfs *next;
	const char *name;
	void *app_data;
	int (*open)(vfs *, const char *, vfs_file *, int, int *);
	void *rest[15]; // xDelete … xNextSystemCall, SQLite's own
};

int sqlite3_vfs_register(vfs *, int);
vfs *sqlite3_vfs_find(const char *);

enum {
	OPEN_WAL = 0x00080000,   // SQLITE_OPEN_WAL
	frame_header = 24,       // a WAL frame's header
	// A commit larger than this goes out in pieces of this size. SQLite's
	// unix VFS writes at most 0x1ffff bytes per call (seekAndWriteFd masks
	// the count) and answers SQLITE_FULL for whatever a larger write leaves.
	buffer_size = 31 << 12,
};

// wal_file is an open WAL: SQLite's file for it lies right after.
typedef struct {
	vfs_file base;
	vfs_file *real;
	char *buf;      // writes not yet made, contiguous from off
	int n;          // bytes in buf
	i64 off;        // the file offset of buf[0]
	int committing; // the last frame header written was a commit's
	unsigned char salt[8]; // the WAL's salt, as its frame headers carry it
	int salted;            // salt is known
} wal_file;

static vfs *base_vfs;
static vfs dg_vfs;
static vfs_methods wal_methods;

// Counters for tests (walwrite.go): SQLite's writes to WALs, and the
// writes made to the files.
static volatile i64 writes_in, writes_out;

static int put(wal_file *w, const void *p, int n, i64 off) {
	__atomic_add_fetch(&writes_out, 1, __ATOMIC_RELAXED);
	return w->real->methods->write(w->real, p, n, off);
}

static int flush(wal_file *w) {
	if (w->n == 0) {
		return 0;
	}
	int n = w->n;
	w->n = 0;
	return put(w, w->buf, n, w->off);
}

static int wal_write(vfs_file *f, const void *p, int n, i64 off) {
	wal_file *w = (wal_file *)f;
	__atomic_add_fetch(&writes_in, 1, __ATOMIC_RELAXED);
	const unsigned char *h = p;
	if (n == frame_header && (!w->salted || memcmp(h + 8, w->salt, 8) == 0)) {
		// A frame's header: bytes 4-7 are the database's size in pages
		// after a commit, zero in any other frame; bytes 8-15 are the
		// WAL's salt, the same in every frame (so that a piece of a page,
		// which SQLite splits only around a sync, is not taken for one).
		w->committing = (h[4] | h[5] | h[6] | h[7]) != 0;
		memcpy(w->salt, h + 8, 8);
		w->salted = 1;
	} else if (off == 0) {
		w->committing = 0; // the WAL's own header: the log starts over
		w->salted = 0;     // with a new salt
	}
	int rc;
	if (w->n > 0 && (off != w->off + w->n || n > buffer_size - w->n)) {
		if ((rc = flush(w)) != 0) {
			return rc;
		}
	}
	if (w->buf == NULL) {
		w->buf = malloc(buffer_size);
	}
	if (w->buf == NULL || n > buffer_size) {
		return put(w, p, n, off);
	}
	if (w->n == 0) {
		w->off = off;
	}
	memcpy(w->buf + w->n, p, n);
	w->n += n;
	// After a commit's frame header, each write goes out at once: the
	// header's own page write completes the commit, and SQLite publishes
	// the frames to other connections only after this returns.
	if (w->committing && n != frame_header) {
		return flush(w);
	}
	return 0;
}

// Everything else SQLite asks of a WAL sees the writes made first.

static int wal_close(vfs_file *f) {
	wal_file *w = (wal_file *)f;
	int rc = flush(w);
	free(w->buf);
	w->buf = NULL;
	int rc2 = w->real->methods->close(w->real);
	return rc ? rc : rc2;
}

#define FLUSHED(call)                                \
	wal_file *w = (wal_file *)f;                     \
	int rc = flush(w);                               \
	if (rc != 0) {                                   \
		return rc;                                   \
	}                                                \
	return w->real->methods->call;

static int wal_read(vfs_file *f, void *p, int n, i64 off) { FLUSHED(read(w->real, p, n, off)) }
static int wal_truncate(vfs_file *f, i64 size) { FLUSHED(truncate(w->real, size)) }
static int wal_sync(vfs_file *f, int flags) { FLUSHED(sync(w->real, flags)) }
static int wal_file_size(vfs_file *f, i64 *size) { FLUSHED(file_size(w->real, size)) }
static int wal_lock(vfs_file *f, int l) { FLUSHED(lock(w->real, l)) }
static int wal_unlock(vfs_file *f, int l) { FLUSHED(unlock(w->real, l)) }
static int wal_check_reserved_lock(vfs_file *f, int *out) { FLUSHED(check_reserved_lock(w->real, out)) }
static int wal_file_control(vfs_file *f, int op, void *arg) { FLUSHED(file_control(w->real, op, arg)) }
static int wal_shm_map(vfs_file *f, int pg, int size, int extend, void volatile **pp) { FLUSHED(shm_map(w->real, pg, size, extend, pp)) }
static int wal_shm_lock(vfs_file *f, int off, int n, int flags) { FLUSHED(shm_lock(w->real, off, n, flags)) }
static int wal_shm_unmap(vfs_file *f, int del) { FLUSHED(shm_unmap(w->real, del)) }

// SQLite maps no WAL into memory (xFetch on a WAL asks for nothing mapped:
// a null page, which SQLite then reads).
static int wal_fetch(vfs_file *f, i64 off, int n, void **pp) {
	*pp = NULL;
	return 0;
}

static int wal_unfetch(vfs_file *f, i64 off, void *p) { return 0; }

static int wal_sector_size(vfs_file *f) {
	wal_file *w = (wal_file *)f;
	return w->real->methods->sector_size(w->real);
}

static int wal_device_characteristics(vfs_file *f) {
	wal_file *w = (wal_file *)f;
	return w->real->methods->device_characteristics(w->real);
}

static void wal_shm_barrier(vfs_file *f) {
	wal_file *w = (wal_file *)f;
	w->real->methods->shm_barrier(w->real);
}

// dg_open opens every file as SQLite's VFS does; a WAL gets wal_methods
// around it. Any other file is SQLite's own, in place, with nothing in
// between.
static int dg_open(vfs *v, const char *name, vfs_file *f, int flags, int *out) {
	if ((flags & OPEN_WAL) == 0) {
		return base_vfs->open(base_vfs, name, f, flags, out);
	}
	wal_file *w = (wal_file *)f;
	memset(w, 0, sizeof *w);
	w->real = (vfs_file *)&w[1];
	int rc = base_vfs->open(base_vfs, name, w->real, flags, out);
	if (rc != 0) {
		if (w->real->methods != NULL) {
			w->real->methods->close(w->real);
		}
		w->base.methods = NULL;
		return rc;
	}
	w->base.methods = &wal_methods;
	return 0;
}

// dg_wal_register registers the VFS as "dg-wal" (not the default). It
// returns 0, or SQLite's error.
int dg_wal_register(void) {
	base_vfs = sqlite3_vfs_find(NULL);
	if (base_vfs == NULL) {
		return 1;
	}
	const vfs_methods m = {
		.version = 3,
		.close = wal_close,
		.read = wal_read,
		.write = wal_write,
		.truncate = wal_truncate,
		.sync = wal_sync,
		.file_size = wal_file_size,
		.lock = wal_lock,
		.unlock = wal_unlock,
		.check_reserved_lock = wal_check_reserved_lock,
		.file_control = wal_file_control,
		.sector_size = wal_sector_size,
		.device_characteristics = wal_device_characteristics,
		.shm_map = wal_shm_map,
		.shm_lock = wal_shm_lock,
		.shm_barrier = wal_shm_barrier,
		.shm_unmap = wal_shm_unmap,
		.fetch = wal_fetch,
		.unfetch = wal_unfetch,
	};
	wal_methods = m;
	dg_vfs = *base_vfs;
	dg_vfs.name = "dg-wal";
	dg_vfs.file_size = (int)sizeof(wal_file) + base_vfs->file_size;
	dg_vfs.app_data = base_vfs->app_data;
	dg_vfs.open = dg_open;
	return sqlite3_vfs_register(&dg_vfs, 0);
}

void dg_wal_counts(i64 *in, i64 *out) {
	*in = __atomic_load_n(&writes_in, __ATOMIC_RELAXED);
	*out = __atomic_load_n(&writes_out, __ATOMIC_RELAXED);
}
