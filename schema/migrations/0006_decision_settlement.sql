-- A decision's successful settlement without an Idempotency-Key
-- (shared/ledgerq.SettleDecision) as an INSERT into the view
-- decision_settlements, whose trigger charges the pending attempt, so that a
-- host may run a group's settlements as one statement with all their rows,
-- as it does their reservations (wasm-host/ledger, merge.go): sqld compiles
-- every statement of every request, and a group's settlements then cost it
-- one compile instead of one each. The write is the UPDATE the settlement
-- ran before, unchanged; the INSERT's RETURNING row says whether it charged
-- the attempt (the attempt is then 'succeeded'; one reconciled first is
-- 'failed' and stays so).
--
-- The columns are the settlement's arguments; the view has no rows.
CREATE VIEW decision_settlements AS SELECT
  NULL AS request_id,
  NULL AS status,
  NULL AS input_tokens,  -- NULL when unknown
  NULL AS output_tokens,
  NULL AS now
WHERE 0;

CREATE TRIGGER decision_settle INSTEAD OF INSERT ON decision_settlements BEGIN
  UPDATE requests SET state = 'succeeded', charged = cost, status = NEW.status, input_tokens = NEW.input_tokens,
      output_tokens = NEW.output_tokens, finished_at = NEW.now
    WHERE id = NEW.request_id AND state = 'pending';
END;
