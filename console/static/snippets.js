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

const LANGS = {
  curl: {
    note: 'A shell with curl. One credit per question.',
    code: (base, key) => `curl -sS ${quote(base + '/service')} \\
  -H ${quote('Authorization: Bearer ' + key)} \\
  -H "Content-Type: application/json" \\
  -d '{
    "state": ${quote(STATE)},
    "questions": {"refund": {"type": "noul", "instructions": ${quote(QUESTION)}}}
  }'
`,
  },
  python: {
    note: 'Python 3, standard library only. Save as decide.py and run python3 decide.py.',
    code: (base, key) => `import json
import urllib.request
import uuid

request = urllib.request.Request(
    ${quote(base + '/service')},
    data=json.dumps({
        "state": ${quote(STATE)},
        "questions": {"refund": {"type": "noul", "instructions": ${quote(QUESTION)}}},
    }).encode(),
    headers={
        "Authorization": ${quote('Bearer ' + key)},
        "Content-Type": "application/json",
        # One key per decision: resending the same key and body retries it
        # without paying twice.
        "Idempotency-Key": str(uuid.uuid4()),
    },
)
with urllib.request.urlopen(request) as response:
    print("credits charged:", response.headers.get("X-Service-Credits"))
    print(json.load(response)["answers"])
`,
  },
  javascript: {
    note: 'Node 18 or later. Save as decide.mjs and run node decide.mjs.',
    code: (base, key) => `const response = await fetch(${quote(base + '/service')}, {
  method: "POST",
  headers: {
    Authorization: ${quote('Bearer ' + key)},
    "Content-Type": "application/json",
    // One key per decision: resending the same key and body retries it
    // without paying twice.
    "Idempotency-Key": crypto.randomUUID(),
  },
  body: JSON.stringify({
    state: ${quote(STATE)},
    questions: { refund: { type: "noul", instructions: ${quote(QUESTION)} } },
  }),
});
console.log("credits charged:", response.headers.get("X-Service-Credits"));
console.log((await response.json()).answers);
`,
  },
  go: {
    note: 'Go, with the client package of this repository (decisiongateway/client): it retries safely under one Idempotency-Key.',
    code: (base, key) => `package main

import (
	"context"
	"fmt"
	"log"

	"decisiongateway/client"
)

func main() {
	c, err := client.New(${quote(base)}, ${quote(key)})
	if err != nil {
		log.Fatal(err)
	}
	d, err := c.Decide(context.Background(), client.Request{
		State: ${quote(STATE)},
		Questions: map[string]client.Question{
			"refund": {Type: "noul", Instructions: ${quote(QUESTION)}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("request:", d.RequestID)
	fmt.Println("refund:", *d.Answers["refund"].Noul)
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
