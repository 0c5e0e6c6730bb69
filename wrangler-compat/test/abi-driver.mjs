// Decodes and re-encodes ABI messages with src/abi.js, for abi_test.go: the
// Go encoder is the reference, and a message must come back byte for byte.
//
// Input: one JSON object per line, {"type": "Batch", "hex": "..."}.
// Output: one JSON object per line, {"hex": "..."} or {"error": "..."}.

import { createInterface } from "node:readline";
import * as abi from "../src/abi.js";

const codecs = {
  Request: [abi.decodeRequest, abi.encodeRequest],
  Response: [abi.decodeResponse, abi.encodeResponse],
  FetchRequest: [abi.decodeFetchRequest, abi.encodeFetchRequest],
  FetchResponse: [abi.decodeFetchResponse, abi.encodeFetchResponse],
  AIRequest: [abi.decodeAIRequest, abi.encodeAIRequest],
  AIResponse: [abi.decodeAIResponse, abi.encodeAIResponse],
  LogRecord: [abi.decodeLogRecord, abi.encodeLogRecord],
  Batch: [abi.decodeBatch, abi.encodeBatch],
  BatchResult: [abi.decodeBatchResult, abi.encodeBatchResult],
};

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { type, hex } = JSON.parse(line);
  let out;
  try {
    const [decode, encode] = codecs[type];
    out = { hex: Buffer.from(encode(decode(new Uint8Array(Buffer.from(hex, "hex"))))).toString("hex") };
  } catch (e) {
    out = { error: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
