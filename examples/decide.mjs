const base = process.env.DECISION_BASE_URL ?? "http://127.0.0.1:8787/v1";
const body = JSON.stringify({ state: "a ripe red apple", questions: {
  fruit: { type: "choice", criteria: { apple: "an apple", pear: "a pear" } } } });
const key = crypto.randomUUID(); // one Idempotency-Key per logical operation
// Codes after which the same key and body may be resent: nothing ran, or
// the outcome is unknown. Any other code is the caller's to fix first.
const retryable = ["request_in_progress", "rate_limit_exceeded", "overloaded", "ledger_unavailable",
  "function_timeout", "internal_error"];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const backoff = (attempt) => 2 ** attempt * (250 + Math.random() * 250); // jittered
for (let attempt = 1; ; attempt++) {
  let response;
  try {
    response = await fetch(`${base}/service`, { method: "POST", body, signal: AbortSignal.timeout(70_000),
      headers: { Authorization: `Bearer ${process.env.DECISION_API_KEY}`,
        "Content-Type": "application/json", "Idempotency-Key": key } });
  } catch (error) { // no answer proves nothing: resend the same key and body
    if (attempt === 5) throw error;
    await sleep(backoff(attempt));
    continue;
  }
  const code = response.headers.get("X-Service-Error-Code"); // classify by header, never by text
  if (response.ok) {
    const answer = await response.json();
    console.log("fruit:", answer.answers.fruit.choice,
      "credits:", response.headers.get("X-Service-Credits"), // absent: unknown, not zero
      "request:", response.headers.get("X-Request-Id"));
    break;
  }
  const text = await response.text();
  if (attempt === 5 || !retryable.includes(code)) throw new Error(`${response.status} ${code} (Idempotency-Key ${key}): ${text}`);
  const delay = Number(response.headers.get("Retry-After"));
  await sleep(Number.isInteger(delay) && delay > 0 ? delay * 1000 : backoff(attempt));
}
