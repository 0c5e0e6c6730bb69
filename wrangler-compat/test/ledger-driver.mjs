// Runs encoded Batches through src/ledger.js against a real libSQL server,
// for ledger_test.go. The Go side builds the batches with shared/abi and
// checks the BatchResults, so the wire format and the batch semantics are
// both checked against the Go definitions.
//
// Usage: node ledger-driver.mjs LIBSQL_URL [--parallel]
// Input: one hex-encoded Batch per line. Output: one hex-encoded BatchResult
// per line, in input order. With --parallel all batches run at once, as
// concurrent requests of one isolate would.

import { createInterface } from "node:readline";
import { decodeBatch, encodeBatchResult } from "../src/abi.js";
import { Ledger } from "../src/ledger.js";

const [url, mode] = process.argv.slice(2);
const ledger = new Ledger(url, process.env.LIBSQL_AUTH_TOKEN ?? "");

const batches = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim()) batches.push(decodeBatch(new Uint8Array(Buffer.from(line, "hex"))));
}

const run = (b) => ledger.exec(b).then((r) => Buffer.from(encodeBatchResult(r)).toString("hex"));
let results;
if (mode === "--parallel") {
  results = await Promise.all(batches.map(run));
} else {
  results = [];
  for (const b of batches) results.push(await run(b));
}
process.stdout.write(results.join("\n") + "\n");
