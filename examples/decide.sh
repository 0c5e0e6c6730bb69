# One Idempotency-Key per logical operation; curl's retries resend it with
# the same body, honouring Retry-After.
OPERATION=$(openssl rand -hex 16)
curl -sS --retry 5 --retry-connrefused --retry-max-time 60 -D - \
  "${DECISION_BASE_URL:-http://127.0.0.1:8787/v1}/service" \
  -H "Authorization: Bearer $DECISION_API_KEY" \
  -H 'Content-Type: application/json' \
  -H "Idempotency-Key: $OPERATION" \
  -d '{"state":"a ripe red apple","questions":{"fruit":{"type":"choice","criteria":{"apple":"an apple","pear":"a pear"}}}}'
