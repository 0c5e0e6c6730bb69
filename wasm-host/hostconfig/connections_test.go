package hostconfig

import (
	"strings"
	"syscall"
	"testing"
)

// The default bound on client connections leaves the host 256 descriptors
// and one beside each connection for its upstream connection; a tiny limit
// still allows some connections.
func TestConnectionsLeaveDescriptorsForTheHost(t *testing.T) {
	for _, c := range []struct {
		files uint64
		want  int
	}{{1 << 20, (1<<20 - 256) / 2}, {20000, 9872}, {1024, 384}, {288, 16}, {200, 16}, {0, 16}, {1 << 63, 1 << 30}} {
		if got := ConnectionsFor(c.files); got != c.want {
			t.Errorf("ConnectionsFor(%d) = %d, want %d", c.files, got, c.want)
		}
	}
	cfg, err := from(nil)
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Connections(), ConnectionsFor(lim.Cur); got != want {
		t.Errorf("unset: %d connections with %d files, want %d", got, lim.Cur, want)
	}
	cfg, err = from(map[string]string{"GATEWAY_MAX_CONNECTIONS": "50"})
	if err != nil || cfg.Connections() != 50 {
		t.Errorf("GATEWAY_MAX_CONNECTIONS=50: %v, %v", cfg, err)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if _, err := from(map[string]string{"GATEWAY_MAX_CONNECTIONS": bad}); err == nil || !strings.Contains(err.Error(), "GATEWAY_MAX_CONNECTIONS") {
			t.Errorf("GATEWAY_MAX_CONNECTIONS=%q accepted (%v)", bad, err)
		}
	}
}
