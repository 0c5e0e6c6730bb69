package pricing

import "testing"

func TestCostRoundsUpPer4096CanonicalBytes(t *testing.T) {
	for _, c := range []struct {
		q, n int
		want int64
	}{
		{1, 1, 1}, {1, 4096, 1}, {1, 4097, 2}, {3, 8192, 6}, {32, 65536, 512}, {32, 65537, 544}, {0, 100, 0}, {2, 0, 0}, {-1, 100, 0},
	} {
		if got := Cost(c.q, c.n); got != c.want {
			t.Errorf("Cost(%d, %d) = %d, want %d", c.q, c.n, got, c.want)
		}
	}
}
