package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// metricsPath is where the gateway serves its metrics to loopback clients
// (wasm-host/app, MetricsPath).
const metricsPath = "/_gateway/metrics"

// ledgerCounts is what the gateway's ledger writer had done at a scrape of
// its metrics (gateway_ledger_batches_total, …_transactions_total).
type ledgerCounts struct{ batches, transactions float64 }

// scrapeLedger reads the writer's counts from the gateway at addr; ok is
// false when the scrape failed (the figures are then left out, not made
// up).
func scrapeLedger(addr string) (c ledgerCounts, ok bool) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + metricsPath)
	if err != nil {
		return c, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, false
	}
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, cut := strings.Cut(sc.Text(), " ")
		if !cut {
			continue
		}
		var into *float64
		switch name {
		case "gateway_ledger_batches_total":
			into = &c.batches
		case "gateway_ledger_transactions_total":
			into = &c.transactions
		default:
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return c, false
		}
		*into = v
		found++
	}
	return c, sc.Err() == nil && found == 2
}

// ledgerFigures is a round's ledger work on the gateway's side: batches
// per transaction (what group commit shared) and transactions per 2xx
// answer. Zero when the scrapes failed.
type ledgerFigures struct{ batchesPerTx, txPer2xx float64 }

func ledgerWork(before, after ledgerCounts, ok2xx int) ledgerFigures {
	tx := after.transactions - before.transactions
	if tx <= 0 || ok2xx == 0 {
		return ledgerFigures{}
	}
	return ledgerFigures{batchesPerTx: (after.batches - before.batches) / tx, txPer2xx: tx / float64(ok2xx)}
}

func (f ledgerFigures) String() string {
	return fmt.Sprintf("%.1f batches/commit, %.2f commits/2xx", f.batchesPerTx, f.txPer2xx)
}
