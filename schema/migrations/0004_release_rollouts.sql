-- Stepped canary rollouts judged across the whole fleet (wasm-host/canary,
-- "Rollouts and analysis" in its package doc). A rollout is a plan of shares
-- (steps); each step has a fleet-wide sample of canary requests, admitted
-- one by one from this row, so a broken canary reaches at most min_samples
-- callers per step however many hosts serve it. Hosts write per-version
-- outcomes into release_samples; any host's analysis tick reads them and
-- advances, promotes or rolls back, conditionally on step_since so that
-- hosts deciding together decide once.

ALTER TABLE releases ADD COLUMN steps TEXT NOT NULL DEFAULT '';       -- shares in basis points, "100,1000!,5000"; ! = wait for `release advance`
ALTER TABLE releases ADD COLUMN step INTEGER NOT NULL DEFAULT 0;      -- index of the current step in steps
ALTER TABLE releases ADD COLUMN step_since INTEGER;                   -- unix ms the current step started: its analysis window
ALTER TABLE releases ADD COLUMN pause_s INTEGER NOT NULL DEFAULT 0;   -- least time a step lasts
ALTER TABLE releases ADD COLUMN max_latency_ratio REAL NOT NULL DEFAULT 1.5;
ALTER TABLE releases ADD COLUMN budget INTEGER NOT NULL DEFAULT -1;   -- canary admissions allowed before the step's verdict; -1: unlimited
ALTER TABLE releases ADD COLUMN admitted INTEGER NOT NULL DEFAULT 0;  -- canary admissions so far in this step
ALTER TABLE releases ADD COLUMN verdict TEXT NOT NULL DEFAULT '';     -- the latest analysis, in words

-- Outcomes per function version, counted by every host and added up here
-- in 10-second buckets. since is the step_since of the rollout step the
-- requests were served under (0 without a canary), so a step's analysis
-- reads exactly its own requests, canary and stable alike.
CREATE TABLE release_samples (
  function        TEXT NOT NULL,
  sha256          TEXT NOT NULL,
  since           INTEGER NOT NULL,
  at              INTEGER NOT NULL,              -- unix seconds: a multiple of 10 (hosts) or any second (Workers)
  requests        INTEGER NOT NULL DEFAULT 0,    -- every request, 4xx included
  errors          INTEGER NOT NULL DEFAULT 0,    -- platform and function 5xx, traps, timeouts
  client_errors   INTEGER NOT NULL DEFAULT 0,    -- 4xx: neither good nor bad, left out of the error rate
  upstream_errors INTEGER NOT NULL DEFAULT 0,    -- 5xx the function blamed on its upstream
  judged          INTEGER NOT NULL DEFAULT 0,    -- requests - client_errors - upstream_errors - cancelled
  fn_us           INTEGER NOT NULL DEFAULT 0,    -- function time of the judged requests, queue wait excluded
  queue_us        INTEGER NOT NULL DEFAULT 0,    -- wait for a free instance, all requests
  PRIMARY KEY (function, sha256, since, at)
);

-- Versions that failed analysis: `release canary` refuses them again
-- unless forced.
CREATE TABLE release_failures (
  function  TEXT NOT NULL,
  sha256    TEXT NOT NULL,
  reason    TEXT NOT NULL,
  failed_at INTEGER NOT NULL,                    -- unix seconds
  PRIMARY KEY (function, sha256)
);

-- A canary started before this migration becomes a one-step rollout whose
-- window starts with it, with no admission limit (it was already serving),
-- gated: judged and rolled back if it fails, but promoted only by an
-- operator, as it would have been.
UPDATE releases SET step_since = canary_since, steps = CAST(canary_bp AS TEXT) || '!' WHERE canary_sha IS NOT NULL;
