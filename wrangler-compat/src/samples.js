// Per-version outcome counts of a function Worker, written to the ledger's
// release_samples as the wazero host writes them (wasm-host/canary,
// samples.go), so that `workers release watch` judges a Workers canary
// with the same analysis (README, "Rolling out and rolling back a
// function"). One row per version and 10-second bucket, added to with an
// upsert; since is always 0 here: the watch reads its window by time.

import { Kind } from "./abi.js";

// One-second buckets: `release watch` reads whole buckets after a
// deployment, so a finer bucket loses less of a step's window.
const BUCKET_S = 1;

const UPSERT = `INSERT INTO release_samples (function, sha256, since, at, requests, errors, client_errors, upstream_errors, judged, fn_us, queue_us)
  VALUES (?, ?, 0, ?, 1, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (function, sha256, since, at) DO UPDATE SET requests = requests + 1, errors = errors + excluded.errors,
    client_errors = client_errors + excluded.client_errors, upstream_errors = upstream_errors + excluded.upstream_errors,
    judged = judged + excluded.judged, fn_us = fn_us + excluded.fn_us, queue_us = queue_us + excluded.queue_us`;

/**
 * classify tells how a request ended, as wasm-host/canary does: "failed"
 * (5xx, trap, timeout), "upstream" (a 5xx the function blamed on its
 * upstream), "client" (4xx) or "served".
 */
export function classify(status, headers) {
  if (status >= 500) {
    const source = headers.find(([h]) => h === "x-service-error-source")?.[1];
    return source === "upstream" ? "upstream" : "failed";
  }
  if (status < 100) return "failed";
  if (status >= 400) return "client";
  return "served";
}

const int = (n) => ({ kind: Kind.Integer, value: BigInt(Math.max(0, Math.round(n))) });
const text = (s) => ({ kind: Kind.Text, value: s });

/**
 * record adds one request's outcome. fnMs is the function's own time,
 * queueMs the wait for a free instance. It never throws: a count that
 * cannot be written is lost, never the request.
 */
export async function record(ledger, name, sha256, status, headers, fnMs, queueMs, now = Date.now()) {
  const kind = classify(status, headers);
  const judged = kind === "served" || kind === "failed";
  const at = Math.floor(now / 1000 / BUCKET_S) * BUCKET_S;
  const args = [text(name), text(sha256), int(at), int(kind === "failed" ? 1 : 0), int(kind === "client" ? 1 : 0),
    int(kind === "upstream" ? 1 : 0), int(judged ? 1 : 0), int(judged ? fnMs * 1000 : 0), int(queueMs * 1000)];
  try {
    await ledger.exec({ steps: [{ sql: UPSERT, args, when: [] }] });
  } catch {
    // counted best effort
  }
}
