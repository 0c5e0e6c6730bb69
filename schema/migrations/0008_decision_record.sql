-- A decision recorded in one statement after its upstream call: the
-- reservation and the successful settlement together, for a decision the
-- host ran before reserving (schema/ledger.md, "Speculative decisions").
-- The INSERT into the view decision_records runs the reservation's
-- trigger (0005) and then the settlement's (0007) for the same row, so the
-- writes, their conditions and the entries are exactly those of the two
-- batches run one after the other; a reservation refused leaves nothing to
-- settle. Without an Idempotency-Key only: a keyed attempt claims its key
-- before the upstream is called.
CREATE VIEW decision_records AS SELECT
  NULL AS request_id,
  NULL AS account_id,
  NULL AS key_hash,
  NULL AS auth_scope,
  NULL AS auth_limit,
  NULL AS window_start,
  NULL AS rate_limit,
  NULL AS cost,
  NULL AS source,
  NULL AS model,
  NULL AS questions,
  NULL AS lease_until,
  NULL AS now,
  NULL AS status,
  NULL AS input_tokens,
  NULL AS output_tokens,
  NULL AS resolved_model
WHERE 0;

CREATE TRIGGER decision_record INSTEAD OF INSERT ON decision_records BEGIN
  INSERT INTO decision_reservations (request_id, account_id, key_hash, auth_scope, auth_limit, window_start, rate_limit,
      idem_key, fingerprint, expires_at, cost, source, model, questions, lease_until, now)
    VALUES (NEW.request_id, NEW.account_id, NEW.key_hash, NEW.auth_scope, NEW.auth_limit, NEW.window_start, NEW.rate_limit,
      NULL, NULL, NULL, NEW.cost, NEW.source, NEW.model, NEW.questions, NEW.lease_until, NEW.now);
  INSERT INTO decision_settlements (request_id, status, input_tokens, output_tokens, now, resolved_model)
    VALUES (NEW.request_id, NEW.status, NEW.input_tokens, NEW.output_tokens, NEW.now, NEW.resolved_model);
END;
