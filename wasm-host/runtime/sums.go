package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SumFile returns the SHA-256 of the module file at path: its version and
// its key in the cache. With a cache directory it keeps the sum beside the
// file's identity (device, inode, size, modification and change times) and
// hashes the file again only when one of them differs. On a 2-core Intel
// Xeon without SHA instructions hashing the seven modules (1.5 MB) took
// about 8 ms of a start's CPU, and the decision module's hash 1.4 ms of
// its critical path (make bench-load, coldstart).
//
// A file is remembered only once it is older than sumsSettle: a file
// rewritten within the clock's granularity of its last write keeps its
// modification time, so a sum taken then could outlive its content (git's
// "racy" entries). The change time cannot be set back by a writer, so a
// file replaced later always looks new. Whoever can write the cache
// directory can already replace the instrumented modules kept there, so
// the memo trusts no one it did not already trust.
func SumFile(cacheDir, path string) (sum [32]byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return sum, err
	}
	id, ok := fileIdentity(before)
	memo := ""
	if ok && cacheDir != "" {
		memo = sumsPath(cacheDir, path)
		if sum, ok := readSum(memo, id); ok {
			return sum, nil
		}
	}
	h := sha256.New()
	var buf [32 << 10]byte
	if _, err := io.CopyBuffer(h, f, buf[:]); err != nil {
		return sum, err
	}
	h.Sum(sum[:0])
	if memo == "" || !settled(before, time.Now()) {
		return sum, nil
	}
	if after, err := f.Stat(); err == nil {
		if again, ok := fileIdentity(after); ok && again == id {
			writeSum(memo, id, sum)
		}
	}
	return sum, nil
}

// sumsSettle is how old a file must be for its sum to be remembered (a
// variable for the tests).
var sumsSettle = 2 * time.Second

func settled(fi os.FileInfo, now time.Time) bool {
	changed, ok := changeTime(fi)
	return ok && now.Sub(fi.ModTime()) > sumsSettle && now.Sub(changed) > sumsSettle
}

// sumsPath is the memo of the file at path: one small file per module
// path, named by the path's own hash.
func sumsPath(cacheDir, path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	h := sha256.Sum256([]byte(path))
	return filepath.Join(cacheDir, "sums", hex.EncodeToString(h[:16]))
}

// A memo is one line: the identity, then the sum in hex.
func readSum(memo, id string) (sum [32]byte, ok bool) {
	b, err := os.ReadFile(memo)
	if err != nil {
		return sum, false
	}
	line, found := strings.CutPrefix(strings.TrimSuffix(string(b), "\n"), id+" ")
	if !found || hex.DecodedLen(len(line)) != len(sum) {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(line)); err != nil {
		return sum, false
	}
	return sum, true
}

// writeSum is best effort: a start that cannot write it hashes again
// next time.
func writeSum(memo, id string, sum [32]byte) {
	putCacheFile(memo, fmt.Appendf(nil, "%s %x\n", id, sum))
}

// putCacheFile writes b to path in the cache, best effort (a start that
// cannot write the cache does the work again next time), renamed into
// place so that a reader never sees half a file.
func putCacheFile(path string, b []byte) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil && cerr == nil {
		_ = os.Rename(f.Name(), path)
	}
	_ = os.Remove(f.Name())
}
