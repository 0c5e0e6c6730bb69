-- A decision's reservation (shared/ledgerq.ReserveDecision) as one
-- statement: an INSERT into the view decision_reservations, whose trigger
-- runs the reservation's writes inside the INSERT, followed in the same
-- batch by one SELECT that reads the outcome. The writes and their order are
-- those of the batch it replaces (schema/ledger.md, "A decision in two round
-- trips"); what changed is where their conditions live. Each write carries
-- the condition that decides it in its own WHERE clause, evaluated on the
-- rows the earlier writes left, instead of a condition on an earlier step's
-- result: so the batch has no conditions, sqld runs two statements instead
-- of ten (no guards, no checkpoints), and the host sends, and reads the
-- results of, two. Measured in schema/ledger.md.
--
-- The columns are the reservation's arguments; the view has no rows.
CREATE VIEW decision_reservations AS SELECT
  NULL AS request_id,   -- the attempt's id (requests.id)
  NULL AS account_id,
  NULL AS key_hash,     -- the API key's hash; NULL when the caller signed in (playground)
  NULL AS auth_scope,   -- 'auth:' || the hashed client address (with a key)
  NULL AS auth_limit,   -- authentication attempts allowed per address per window
  NULL AS window_start, -- the minute window both counters count in
  NULL AS rate_limit,   -- decisions allowed per account per window
  NULL AS idem_key,     -- NULL without an Idempotency-Key
  NULL AS fingerprint,  -- of the canonical request (with a key)
  NULL AS expires_at,   -- the idempotency record's retention
  NULL AS cost,
  NULL AS source,
  NULL AS model,
  NULL AS questions,
  NULL AS lease_until,
  NULL AS now
WHERE 0;

-- Each write's condition is tested in its own WHERE clause. Where it is
-- "the write before changed a row", the test is changes(): within a trigger
-- program each INSERT, UPDATE and DELETE sets it on completion, so from the
-- trigger's second such statement on it is the previous one's count, and a
-- statement sees one value throughout (SQLite's sqlite3_changes()
-- documentation). That keeps the program SQLite compiles for every request
-- small (sqld prepares every statement afresh, this trigger's program
-- included): each longer condition is written once.
CREATE TRIGGER decision_reserve INSTEAD OF INSERT ON decision_reservations BEGIN
  -- The address's authentication attempt, with a key: the rate rule's count
  -- (shared/batch, Count), every attempt counted.
  INSERT INTO rate_windows (scope, window_start, count)
    SELECT NEW.auth_scope, NEW.window_start, 1 WHERE NEW.key_hash IS NOT NULL
    ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1;
  -- The key's use, recorded when the key is live, is the account's, and the
  -- address is within its limit: that is the key check. It changes a row
  -- exactly when the caller is authenticated by a key.
  UPDATE api_keys SET last_used_at = NEW.now
    WHERE secret_hash = NEW.key_hash AND account_id = NEW.account_id AND revoked_at IS NULL
      AND (SELECT count FROM rate_windows WHERE scope = NEW.auth_scope AND window_start = NEW.window_start) <= NEW.auth_limit;
  -- Authenticated (by the key check; without a key, the signed-in account
  -- exists): count the attempt on the account's window; replays count too
  -- (spec §4.1 rule 3). It changes a row exactly when authenticated.
  INSERT INTO rate_windows (scope, window_start, count)
    SELECT 'decide:' || NEW.account_id, NEW.window_start, 1
    WHERE CASE WHEN NEW.key_hash IS NULL THEN EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id) ELSE changes() > 0 END
    ON CONFLICT (scope, window_start) DO UPDATE SET count = count + 1;
  -- May the attempt be paid for? Authenticated, the balance covers the
  -- cost, the account's window is within its limit, and no attempt of the
  -- account is pending past its lease (that one is reconciled first). With
  -- an Idempotency-Key, the claim carries exactly these conditions, so the
  -- key is taken exactly when the attempt is paid for; a live record is
  -- kept, an expired one taken over (spec §3.1). The claim changes a row
  -- exactly when it takes the key; without a key it does not run, and the
  -- request below tests the conditions itself.
  INSERT INTO idempotency (account_id, key, fingerprint, state, request_id, created_at, expires_at)
    SELECT NEW.account_id, NEW.idem_key, NEW.fingerprint, 'pending', NEW.request_id, NEW.now, NEW.expires_at
    WHERE NEW.idem_key IS NOT NULL AND changes() > 0
      AND (SELECT balance FROM accounts WHERE id = NEW.account_id) >= NEW.cost
      AND (SELECT count FROM rate_windows WHERE scope = 'decide:' || NEW.account_id AND window_start = NEW.window_start) <= NEW.rate_limit
      AND NOT EXISTS (SELECT 1 FROM requests WHERE account_id = NEW.account_id AND state = 'pending' AND lease_until < NEW.now)
    ON CONFLICT (account_id, key) DO UPDATE SET fingerprint = excluded.fingerprint, state = 'pending',
      request_id = excluded.request_id, created_at = excluded.created_at, expires_at = excluded.expires_at,
      status = NULL, headers = NULL, body = NULL, mode = NULL
    WHERE idempotency.expires_at <= excluded.created_at;
  -- The attempt, pending with its lease: with a key exactly when this
  -- attempt took it; without one under the conditions above, the key check
  -- written out again (the claim that did not run left changes() at 0;
  -- without an API key the balance test finds the account or fails). Its
  -- request id is new, so the row exists exactly when the attempt is paid
  -- for.
  INSERT INTO requests (id, account_id, key_id, source, model, questions, cost, state, idem_key, lease_until, created_at)
    SELECT NEW.request_id, NEW.account_id, (SELECT id FROM api_keys WHERE secret_hash = NEW.key_hash), NEW.source, NEW.model,
      NEW.questions, NEW.cost, 'pending', NEW.idem_key, NEW.lease_until, NEW.now
    WHERE CASE WHEN NEW.idem_key IS NOT NULL THEN changes() > 0
      ELSE (NEW.key_hash IS NULL OR EXISTS (SELECT 1 FROM api_keys WHERE secret_hash = NEW.key_hash AND account_id = NEW.account_id
          AND revoked_at IS NULL AND (SELECT count FROM rate_windows WHERE scope = NEW.auth_scope AND window_start = NEW.window_start) <= NEW.auth_limit))
        AND (SELECT count FROM rate_windows WHERE scope = 'decide:' || NEW.account_id AND window_start = NEW.window_start) <= NEW.rate_limit
        AND (SELECT balance FROM accounts WHERE id = NEW.account_id) >= NEW.cost
        AND NOT EXISTS (SELECT 1 FROM requests WHERE account_id = NEW.account_id AND state = 'pending' AND lease_until < NEW.now) END;
  -- The money, exactly when the attempt was recorded: the debit and its
  -- reserve entry (balance = Σ entries).
  UPDATE accounts SET balance = balance - NEW.cost WHERE id = NEW.account_id AND changes() > 0;
  INSERT INTO credit_entries (account_id, delta, kind, request_id, created_at)
    SELECT NEW.account_id, -NEW.cost, 'reserve', NEW.request_id, NEW.now WHERE changes() > 0;
END;
