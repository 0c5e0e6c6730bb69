//go:build linux

package runtime

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSumFileRemembersOnlyWhatCannotHaveChanged: a settled file's sum is
// kept and used without reading the file; a file rewritten in place, even
// to the same size and modification time, is hashed again; a new file is
// not remembered; a damaged memo is only a miss.
func TestSumFileRemembersOnlyWhatCannotHaveChanged(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "decide.wasm")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sumOf := func() [32]byte {
		t.Helper()
		sum, err := SumFile(cache, path)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	memo := sumsPath(cache, path)

	write("version one")
	if got := sumOf(); got != sha256.Sum256([]byte("version one")) {
		t.Fatalf("sum %x, want the file's SHA-256", got)
	}
	if _, err := os.Stat(memo); !os.IsNotExist(err) {
		t.Fatalf("a file written just now was remembered (%v): a rewrite within the clock's granularity would keep its times", err)
	}

	settle := sumsSettle
	sumsSettle = -time.Hour // every file counts as settled
	t.Cleanup(func() { sumsSettle = settle })
	sumOf()
	b, err := os.ReadFile(memo)
	if err != nil {
		t.Fatalf("a settled file's sum was not remembered: %v", err)
	}
	// The memo is what answers: a sum planted in it comes back unread.
	var planted [32]byte
	planted[0] = 0xAB
	fi, _ := os.Stat(path)
	id, _ := fileIdentity(fi)
	writeSum(memo, id, planted)
	if got := sumOf(); got != planted {
		t.Fatalf("sum %x, want the remembered %x: the file was hashed again", got, planted)
	}

	// Same size, same modification time, new content: the change time
	// moves, so the file is hashed again.
	// Files' times come from a coarse clock (a jiffy, up to 10 ms): a
	// rewrite within one could keep even the change time, which is why
	// only settled files are remembered. Past one, it moves.
	mtime := fi.ModTime()
	time.Sleep(25 * time.Millisecond)
	write("version two")
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if got := sumOf(); got != sha256.Sum256([]byte("version two")) {
		t.Fatalf("sum %x after a rewrite to the same size and time, want the new content's", got)
	}

	if b, err = os.ReadFile(memo); err != nil {
		t.Fatal(err)
	}
	for _, damaged := range []string{"", "v1 1 2 3", string(b[:len(b)-3]) + "zz\n", string(b) + string(b)} {
		if err := os.WriteFile(memo, []byte(damaged), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := sumOf(); got != sha256.Sum256([]byte("version two")) {
			t.Fatalf("with the memo %q: sum %x, want the file's", damaged, got)
		}
	}

	if _, err := SumFile(cache, filepath.Join(dir, "missing.wasm")); !os.IsNotExist(err) {
		t.Fatalf("a missing module: %v, want not-exist", err)
	}
}
