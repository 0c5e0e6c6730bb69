import json, os, random, time, urllib.error, urllib.request, uuid

base = os.environ.get("DECISION_BASE_URL", "http://127.0.0.1:8787/v1")
body = json.dumps({"state": "a ripe red apple", "questions": {
    "fruit": {"type": "choice", "criteria": {"apple": "an apple", "pear": "a pear"}}}}).encode()
key = str(uuid.uuid4())  # one Idempotency-Key per logical operation
# Codes after which the same key and body may be resent: nothing ran, or
# the outcome is unknown. Any other code is the caller's to fix first.
retry = ("request_in_progress", "rate_limit_exceeded", "overloaded", "ledger_unavailable",
         "function_timeout", "internal_error")
for attempt in range(1, 6):
    request = urllib.request.Request(base + "/service", data=body, method="POST", headers={
        "Authorization": "Bearer " + os.environ["DECISION_API_KEY"],
        "Content-Type": "application/json", "Idempotency-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=70) as response:
            answer = json.load(response)
            print("fruit:", answer["answers"]["fruit"]["choice"],
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
        time.sleep(2 ** attempt * random.uniform(0.5, 1))  # jittered backoff
