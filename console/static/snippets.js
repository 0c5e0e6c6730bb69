// Copy-ready code that calls POST /v1/service with a new key filled in:
// curl, Python (standard library only), JavaScript (Node 18+ or Deno) and
// Go (the decisiongateway/client package, which retries without paying
// twice). The text exists only in the page of the person who created the
// key: it is never sent anywhere, stored or logged.

const STATE = 'Order 1042 arrived broken; I want my money back.';
const QUESTION = 'Does the customer ask for a refund?';

// quote makes s a double-quoted literal valid in Python, JavaScript and Go
// (JSON string syntax is a subset of all three for these characters).
const quote = (s) => JSON.stringify(s);

// RETRY are the codes (X-Service-Error-Code) after which resending the same
// key and body is safe and may succeed: nothing ran, or the outcome is not
// known. Anything else is answered at once, with its code.
const RETRY = ['request_in_progress', 'rate_limit_exceeded', 'overloaded', 'ledger_unavailable', 'function_timeout', 'internal_error'];
const list = (codes) => codes.map(quote).join(', ');

const LANGS = {
  curl: {
    note: 'A shell with curl and openssl. One credit per question. -D - shows the headers: X-Service-Credits, X-Request-Id, X-Service-Error-Code.',
    code: (base, key) => `# One Idempotency-Key per decision; curl's retries resend it with the same
# body, honouring Retry-After, so a retry never pays twice.
OPERATION=$(openssl rand -hex 16)
curl -sS --retry 5 --retry-connrefused --retry-max-time 60 -D - \\
  ${quote(base + '/service')} \\
  -H ${quote('Authorization: Bearer ' + key)} \\
  -H "Content-Type: application/json" \\
  -H "Idempotency-Key: $OPERATION" \\
  -d '{
    "state": ${quote(STATE)},
    "questions": {"refund": {"type": "noul", "instructions": ${quote(QUESTION)}}}
  }'
`,
  },
  python: {
    note: 'Python 3, standard library only. Save as decide.py and run python3 decide.py.',
    code: (base, key) => `import json, random, time, urllib.error, urllib.request, uuid

body = json.dumps({
    "state": ${quote(STATE)},
    "questions": {"refund": {"type": "noul", "instructions": ${quote(QUESTION)}}},
}).encode()
key = str(uuid.uuid4())  # one Idempotency-Key per decision, resent by every retry
retry = (${list(RETRY)})
for attempt in range(1, 6):
    request = urllib.request.Request(${quote(base + '/service')}, data=body, method="POST", headers={
        "Authorization": ${quote('Bearer ' + key)},
        "Content-Type": "application/json", "Idempotency-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=70) as response:
            answer = json.load(response)
            print("refund:", answer["answers"]["refund"]["noul"],
                  "credits:", response.headers.get("X-Service-Credits"),  # absent: unknown, not zero
                  "request:", response.headers["X-Request-Id"])
            break
    except urllib.error.HTTPError as error:  # classify by header, never by the body's text
        code = error.headers.get("X-Service-Error-Code")
        if attempt == 5 or code not in retry:
            raise SystemExit(f"{error.code} {code} (Idempotency-Key {key}): {error.read().decode()}")
        delay = error.headers.get("Retry-After", "")
        time.sleep(int(delay) if delay.isdigit() else 2 ** attempt * random.uniform(0.5, 1))
    except OSError:  # no answer proves nothing: resend the same key and body
        if attempt == 5:
            raise
        time.sleep(2 ** attempt * random.uniform(0.5, 1))
`,
  },
  javascript: {
    note: 'Node 18 or later. Save as decide.mjs and run node decide.mjs.',
    code: (base, key) => `const body = JSON.stringify({
  state: ${quote(STATE)},
  questions: { refund: { type: "noul", instructions: ${quote(QUESTION)} } },
});
const key = crypto.randomUUID(); // one Idempotency-Key per decision, resent by every retry
const retry = [${list(RETRY)}];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
for (let attempt = 1; ; attempt++) {
  let response;
  try {
    response = await fetch(${quote(base + '/service')}, { method: "POST", body, signal: AbortSignal.timeout(70_000),
      headers: { Authorization: ${quote('Bearer ' + key)},
        "Content-Type": "application/json", "Idempotency-Key": key } });
  } catch (error) { // no answer proves nothing: resend the same key and body
    if (attempt === 5) throw error;
    await sleep(2 ** attempt * (250 + Math.random() * 250));
    continue;
  }
  const code = response.headers.get("X-Service-Error-Code"); // classify by header, never by text
  if (response.ok) {
    const answer = await response.json();
    console.log("refund:", answer.answers.refund.noul,
      "credits:", response.headers.get("X-Service-Credits"), // absent: unknown, not zero
      "request:", response.headers.get("X-Request-Id"));
    break;
  }
  const text = await response.text();
  if (attempt === 5 || !retry.includes(code)) throw new Error(\`\${response.status} \${code} (Idempotency-Key \${key}): \${text}\`);
  const delay = Number(response.headers.get("Retry-After"));
  await sleep(Number.isInteger(delay) && delay > 0 ? delay * 1000 : 2 ** attempt * (250 + Math.random() * 250));
}
`,
  },
  go: {
    note: 'Go, with the client package of this repository (decisiongateway/client): it retries safely under one Idempotency-Key.',
    code: (base, key) => `package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"decisiongateway/client"
)

func main() {
	c, err := client.New(${quote(base)}, ${quote(key)})
	if err != nil {
		log.Fatal(err)
	}
	// The deadline bounds the whole call: every attempt and every wait.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := c.Decide(ctx, client.Request{
		State: ${quote(STATE)},
		Questions: map[string]client.Question{
			"refund": {Type: "noul", Instructions: ${quote(QUESTION)}},
		},
	})
	var e *client.Error
	if errors.As(err, &e) && e.Uncertain {
		log.Fatalf("outcome unknown; later: c.Recover(ctx, %q, sameRequest)", e.IdempotencyKey)
	} else if err != nil {
		log.Fatal(err) // e.Code is the gateway's X-Service-Error-Code
	}
	credits := "unknown" // no X-Service-Credits is not zero
	if d.Credits != nil {
		credits = fmt.Sprint(*d.Credits)
	}
	fmt.Println("refund:", *d.Answers["refund"].Noul, "credits:", credits, "request:", d.RequestID)
}
`,
  },
};

// snippet returns the note and code for lang, calling base (the API's
// versioned base URL, e.g. https://gateway.example.com/v1) with key.
export function snippet(lang, base, key) {
  const l = LANGS[lang];
  return { note: l.note + ' Keep the key out of source control: in real code read it from the environment.', code: l.code(base, key) };
}
