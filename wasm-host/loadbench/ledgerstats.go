package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"decisiongateway/wasm-host/canary"
)

// ledgerCounts is what the gateway's ledger writer had done at a scrape of
// its metrics (gateway_ledger_batches_total, …_transactions_total).
type ledgerCounts struct{ batches, transactions float64 }

// scrapeLedger reads the writer's counts from the gateway at addr; ok is
// false when the scrape failed (the figures are then left out, not made
// up).
func scrapeLedger(addr string) (c ledgerCounts, ok bool) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + canary.MetricsPath)
	if err != nil {
		return c, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, false
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return c, false
	}
	counter := func(name string, into *float64) bool {
		f := families[name]
		if f == nil || len(f.Metric) != 1 || f.Metric[0].Counter == nil {
			return false
		}
		*into = f.Metric[0].Counter.GetValue()
		return true
	}
	return c, counter("gateway_ledger_batches_total", &c.batches) && counter("gateway_ledger_transactions_total", &c.transactions)
}

// ledgerFigures is a round's ledger work on the gateway's side: batches
// per transaction (what group commit shared) and transactions per 2xx
// answer. Zero when the scrapes failed.
type ledgerFigures struct{ batchesPerTx, txPer2xx float64 }

// ledgerWork is the figures of d, the writer's counts over a round that
// gave ok2xx answers (zero counts: the scrapes failed).
func ledgerWork(d ledgerCounts, ok2xx int) ledgerFigures {
	if d.transactions <= 0 || ok2xx == 0 {
		return ledgerFigures{}
	}
	return ledgerFigures{batchesPerTx: d.batches / d.transactions, txPer2xx: d.transactions / float64(ok2xx)}
}

// since is c minus earlier, the writer's work in between.
func (c ledgerCounts) since(earlier ledgerCounts) ledgerCounts {
	return ledgerCounts{batches: c.batches - earlier.batches, transactions: c.transactions - earlier.transactions}
}

func (f ledgerFigures) String() string {
	return fmt.Sprintf("%.1f batches/commit, %.2f commits/2xx", f.batchesPerTx, f.txPer2xx)
}
