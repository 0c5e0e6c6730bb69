package app

import (
	"context"
	"time"

	"decisiongateway/shared/ledgerq"
)

// Sweep settles every decision attempt whose lease ended before now (its
// host died or could not settle): failed, refunded, its idempotency key
// failed. It returns how many it settled.
func (a *App) Sweep(ctx context.Context, now time.Time) (int64, error) {
	return ledgerq.Reconcile(a.Ledger.Bind(ctx), "", now)
}

// abandon settles the attempt of a request whose module stopped without
// answering (canary.Options.Abandon): refunded now, not after its lease.
func (a *App) abandon(ctx context.Context, requestID string) {
	settled, err := ledgerq.Abandon(a.Ledger.Bind(ctx), requestID, "module_failed", time.Now())
	switch {
	case err != nil:
		a.Log.Warn("attempt of a failed request not settled; the sweeper will", "request", requestID, "error", err.Error())
	case settled:
		a.Log.Info("attempt of a failed request refunded", "request", requestID)
	}
}

// StartSweeper runs Sweep every interval until ctx ends. Every host may run
// one: the batch is atomic and settles an attempt at most once.
func (a *App) StartSweeper(ctx context.Context, every time.Duration) {
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				n, err := a.Sweep(ctx, now)
				if err != nil {
					a.Log.Warn("sweeper: reconciliation failed", "error", err.Error())
				} else if n > 0 {
					a.Log.Warn("sweeper: settled attempts whose lease had ended", "count", n)
				}
			}
		}
	}()
}
