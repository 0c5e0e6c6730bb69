-- Releases of the wazero host's functions (wasm-host/canary): which module
-- version is stable, which one is the canary and for what share of callers,
-- and when a canary is rolled back by itself. `gateway release …` writes
-- these rows; every host reads them every few seconds and applies changes
-- without a restart. Module versions are named by the SHA-256 of their bytes.

-- One row per function that has ever been released. A function without a
-- row (or with stable_sha NULL) serves the module built into
-- GATEWAY_FUNCTIONS_DIR.
CREATE TABLE releases (
  function        TEXT PRIMARY KEY,
  stable_sha      TEXT,                     -- NULL: the built module
  previous_sha    TEXT,                     -- stable before the last promotion (NULL: the built module)
  canary_sha      TEXT,                     -- NULL: no canary
  canary_bp       INTEGER NOT NULL DEFAULT 0 CHECK (canary_bp BETWEEN 0 AND 10000), -- share in basis points
  canary_since    INTEGER,                  -- unix ms the canary started serving; its error window starts here
  max_error_rate  REAL NOT NULL DEFAULT 0.05 CHECK (max_error_rate >= 0 AND max_error_rate <= 1),
  min_samples     INTEGER NOT NULL DEFAULT 100 CHECK (min_samples >= 1),
  generation      INTEGER NOT NULL DEFAULT 1, -- bumped on every change; hosts apply a row when it moves
  rolled_back_sha TEXT,                     -- the last version rolled back, by a host or an operator
  rollback_reason TEXT,
  rolled_back_at  INTEGER,                  -- unix seconds
  updated_at      INTEGER NOT NULL          -- unix seconds
);

-- The module bytes of every released version, so that any host sharing the
-- ledger can run it; hosts keep a copy under GATEWAY_DATA_DIR/releases.
CREATE TABLE release_modules (
  function   TEXT NOT NULL,
  sha256     TEXT NOT NULL,                 -- lower-case hex of wasm
  wasm       BLOB NOT NULL,
  size       INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (function, sha256)
);

-- What happened to each release, oldest first: canary, promote, rollback,
-- auto-rollback, with the counts that triggered an automatic rollback.
CREATE TABLE release_events (
  id         INTEGER PRIMARY KEY,
  function   TEXT NOT NULL,
  action     TEXT NOT NULL CHECK (action IN ('canary','promote','rollback','auto-rollback')),
  sha256     TEXT,
  detail     TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL
);
CREATE INDEX release_events_function ON release_events(function, id);
