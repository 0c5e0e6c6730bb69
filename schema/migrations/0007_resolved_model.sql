-- The model the upstream resolved, beside the effective model it was sent
-- (spec §9.5: an alias may resolve differently over time, so the returned
-- model is recorded). NULL while pending, for a failure (no answer), and for
-- attempts settled before this column existed.
ALTER TABLE requests ADD COLUMN resolved_model TEXT;

-- The settlement view of 0006 with the resolved model as one more column.
-- A build that does not know it still inserts its five columns (the new one
-- is then NULL), so both builds of a canary settle through the same view.
DROP TRIGGER decision_settle;
DROP VIEW decision_settlements;

CREATE VIEW decision_settlements AS SELECT
  NULL AS request_id,
  NULL AS status,
  NULL AS input_tokens,   -- NULL when unknown
  NULL AS output_tokens,
  NULL AS now,
  NULL AS resolved_model  -- NULL when the answer named none
WHERE 0;

CREATE TRIGGER decision_settle INSTEAD OF INSERT ON decision_settlements BEGIN
  UPDATE requests SET state = 'succeeded', charged = cost, status = NEW.status, input_tokens = NEW.input_tokens,
      output_tokens = NEW.output_tokens, finished_at = NEW.now, resolved_model = NEW.resolved_model
    WHERE id = NEW.request_id AND state = 'pending';
END;
