package ledger

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"decisiongateway/shared/abi"
)

// killChildEnv names the ledger file a child process of
// TestCommittedBatchesSurviveSIGKILL writes to.
const killChildEnv = "LEDGER_TEST_KILL_CHILD"

// killPadEnv is the size of the blob each of the child's entries carries.
const killPadEnv = "LEDGER_TEST_KILL_PAD"

func TestMain(m *testing.M) {
	if url := os.Getenv(killChildEnv); url != "" {
		killChild(url)
		return
	}
	os.Exit(m.Run())
}

// A host killed with SIGKILL loses no batch whose commit it had reported:
// the embedded file runs in WAL mode with synchronous=NORMAL, where a
// commit is in the WAL file (the kernel's page cache) before COMMIT
// returns. A child process spends credits from 8 goroutines (so groups
// form) and prints each committed debit; it is killed mid-stream, and
// every debit it printed must be there, with the balance equal to the sum
// of the entries. With 30 KB carried by each entry a group's commit is
// larger than one write to the WAL (walwrite.go), so the kill also lands
// between the pieces of a commit.
func TestCommittedBatchesSurviveSIGKILL(t *testing.T) {
	for _, pad := range []int{0, 30000} {
		t.Run("pad="+strconv.Itoa(pad), func(t *testing.T) { killMidStream(t, pad) })
	}
}

func killMidStream(t *testing.T, pad int) {
	url := "file:" + filepath.Join(t.TempDir(), "ledger.db")
	e := openT(t, url)
	run(t, e,
		stmt("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)"),
		stmt("CREATE TABLE entries (id INTEGER PRIMARY KEY, delta INTEGER NOT NULL, note TEXT UNIQUE, pad BLOB)"),
		stmt("INSERT INTO accounts VALUES (1, 1000000)"),
		stmt("INSERT INTO entries (delta, note) VALUES (1000000, 'grant')"),
	)
	e.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+url, killPadEnv+"="+strconv.Itoa(pad))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		acked[lines.Text()] = true
		if len(acked) == 500 {
			cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	cmd.Wait()
	if len(acked) < 500 {
		t.Fatalf("the child committed only %d debits before it stopped", len(acked))
	}

	e = openT(t, url)
	found := map[string]bool{}
	for _, row := range query(t, e, "SELECT note FROM entries WHERE delta = -1") {
		found[row[0].AsString()] = true
	}
	for note := range acked {
		if !found[note] {
			t.Errorf("debit %s was reported committed but is gone", note)
		}
	}
	if ok := scalar(t, e, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'"); ok != 1 {
		t.Errorf("the file after the kill fails SQLite's integrity check")
	}
	balance := scalar(t, e, "SELECT balance FROM accounts WHERE id = 1")
	sum := scalar(t, e, "SELECT sum(delta) FROM entries")
	if balance != sum || balance != 1000000-int64(len(found)) {
		t.Errorf("balance %d, sum of entries %d, %d debits found", balance, sum, len(found))
	}
	t.Logf("%d debits reported before the kill, %d in the file", len(acked), len(found))
}

// killChild debits the account from 8 goroutines until it is killed,
// printing the note of every debit once its batch has committed.
func killChild(url string) {
	e, err := Open(context.Background(), url, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	pad, _ := strconv.Atoi(os.Getenv(killPadEnv))
	var (
		mu sync.Mutex
		n  int
		wg sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				mu.Lock()
				n++
				note := strconv.Itoa(n)
				mu.Unlock()
				res := e.Exec(context.Background(), batchOf(
					stmt("UPDATE accounts SET balance = balance - 1 WHERE id = 1 AND balance >= 1"),
					when(stmt("INSERT INTO entries (delta, note, pad) VALUES (-1, ?, zeroblob(?))", abi.String(note), abi.Int64(int64(pad))),
						abi.Cond{Step: 0, Test: abi.Affected}),
				))
				if res.Err != "" {
					fmt.Fprintln(os.Stderr, res.Err)
					os.Exit(2)
				}
				mu.Lock()
				os.Stdout.WriteString(note + "\n")
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
