-- A decision's record (0008) written directly instead of through the
-- reservation's and the settlement's triggers. The writes, their conditions
-- and the entries are those of the reservation without an Idempotency-Key
-- followed by its successful settlement, as in 0008; what changed is that
-- the attempt is inserted as the settlement leaves it ('succeeded', charged,
-- with its answer's status and tokens) instead of pending and then updated,
-- and that the idempotency claim, which a record never runs, is not part
-- of the program. So SQLite writes the attempt's row once and never enters
-- it in requests_pending, and sqld, which compiles the trigger program for
-- every request that records, compiles about half as much (schema/ledger.md,
-- "Speculative decisions"). The view and its columns are unchanged, so a
-- build from before this migration records through the same view.
DROP TRIGGER decision_record;

CREATE TRIGGER decision_record INSTEAD OF INSERT ON decision_records BEGIN
  -- The address's authentication attempt, with a key (as 0005).
  INSERT INTO rate_windows (scope, window_start, count)
    SELECT NEW.auth_scope, NEW.window_start, 1 WHERE NEW.key_hash IS NOT NULL
    ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1;
  -- The key check (as 0005): it changes a row exactly when the caller is
  -- authenticated by a key.
  UPDATE api_keys SET last_used_at = NEW.now
    WHERE secret_hash = NEW.key_hash AND account_id = NEW.account_id AND revoked_at IS NULL
      AND (SELECT count FROM rate_windows WHERE scope = NEW.auth_scope AND window_start = NEW.window_start) <= NEW.auth_limit;
  -- Authenticated: count the attempt on the account's window (as 0005). It
  -- changes a row exactly when authenticated.
  INSERT INTO rate_windows (scope, window_start, count)
    SELECT 'decide:' || NEW.account_id, NEW.window_start, 1
    WHERE CASE WHEN NEW.key_hash IS NULL THEN EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id) ELSE changes() > 0 END
    ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1;
  -- The attempt, settled: authenticated (changes() is the count just
  -- above, with no claim between), within the account's window, paid for,
  -- and no attempt of the account pending past its lease. The columns the
  -- settlement sets (0007) are set here.
  INSERT INTO requests (id, account_id, key_id, source, model, questions, cost, state, idem_key, lease_until, created_at,
      charged, status, input_tokens, output_tokens, finished_at, resolved_model)
    SELECT NEW.request_id, NEW.account_id, (SELECT id FROM api_keys WHERE secret_hash = NEW.key_hash), NEW.source, NEW.model,
      NEW.questions, NEW.cost, 'succeeded', NULL, NEW.lease_until, NEW.now,
      NEW.cost, NEW.status, NEW.input_tokens, NEW.output_tokens, NEW.now, NEW.resolved_model
    WHERE changes() > 0
      AND (SELECT count FROM rate_windows WHERE scope = 'decide:' || NEW.account_id AND window_start = NEW.window_start) <= NEW.rate_limit
      AND (SELECT balance FROM accounts WHERE id = NEW.account_id) >= NEW.cost
      AND NOT EXISTS (SELECT 1 FROM requests WHERE account_id = NEW.account_id AND state = 'pending' AND lease_until < NEW.now);
  -- The money, exactly when the attempt was recorded (as 0005).
  UPDATE accounts SET balance = balance - NEW.cost WHERE id = NEW.account_id AND changes() > 0;
  INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at)
    SELECT NEW.account_id, -NEW.cost, 'reserve', NEW.request_id, NEW.now WHERE changes() > 0;
END;
