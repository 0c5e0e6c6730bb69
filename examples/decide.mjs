const base = process.env.DECISION_BASE_URL ?? "http://127.0.0.1:8787/v1";
const body = JSON.stringify({ state: "a ripe red apple", questions: {
  fruit: { type: "choice", criteria: { apple: "an apple", pear: "a pear" } } } });
const key = crypto.randomUUID(); // one Idempotency-Key per logical operation
const retryable = ["request_in_progress", "rate_limit_exceeded", "ledger_unavailable"];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let attempt = 1; ; attempt++) {
  let response;
  try {
    response = await fetch(`${base}/service`, { method: "POST", body, signal: AbortSignal.timeout(70_000),
      headers: { Authorization: `Bearer ${process.env.DECISION_API_KEY}`,
        "Content-Type": "application/json", "Idempotency-Key": key } });
  } catch (error) { // no answer proves nothing: resend the same key and body
    if (attempt === 5) throw error;
    await sleep(2 ** attempt * 500);
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
  if (attempt === 5 || !retryable.includes(code)) throw new Error(`${response.status} ${code}: ${await response.text()}`);
  const delay = Number(response.headers.get("Retry-After"));
  await sleep(Number.isInteger(delay) && delay > 0 ? delay * 1000 : 2 ** attempt * 500);
}
