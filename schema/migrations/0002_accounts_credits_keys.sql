-- The system of record for accounts, credits, API keys, sessions, rate
-- windows, idempotency records and decision requests. Times are unix
-- seconds except where a column says _ms. schema/ledger.md explains the
-- invariants; the batches that use these tables live in shared/ledgerq.

-- An account owns keys, sessions, a credit balance and an idempotency
-- namespace. id is 12 base32 characters and appears inside its key and
-- session secrets, so a host can route by account before any ledger read.
CREATE TABLE accounts (
  id              TEXT PRIMARY KEY,
  email           TEXT UNIQUE,              -- lower-case; the sign-in identity
  verified_at     INTEGER,                  -- first successful verification
  welcome_granted INTEGER NOT NULL DEFAULT 0,
  balance         INTEGER NOT NULL DEFAULT 0 CHECK (balance >= 0),
  created_at      INTEGER NOT NULL
);

-- Append-only credit ledger: balance always equals the sum of delta.
CREATE TABLE credit_entries (
  id         INTEGER PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  delta      INTEGER NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('welcome','grant','reserve','refund')),
  request_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX credit_entries_account ON credit_entries(account_id, id);

-- API keys. Only the SHA-256 of the secret is stored; prefix is what
-- listings show.
CREATE TABLE api_keys (
  id           TEXT PRIMARY KEY,
  account_id   TEXT NOT NULL REFERENCES accounts(id),
  name         TEXT NOT NULL,
  prefix       TEXT NOT NULL,
  secret_hash  TEXT NOT NULL UNIQUE,
  created_at   INTEGER NOT NULL,
  revoked_at   INTEGER,
  last_used_at INTEGER
);
CREATE INDEX api_keys_account ON api_keys(account_id, revoked_at);

-- Browser sessions, stored hashed like keys.
CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  ended_at   INTEGER
);
CREATE INDEX sessions_account ON sessions(account_id);

-- Single-use sign-in links, stored hashed.
CREATE TABLE signin_tokens (
  token_hash TEXT PRIMARY KEY,
  email      TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
);

-- Fixed one-minute (or other) windows counted per scope, e.g.
-- 'decide:<account>', 'models:<account>', 'auth:<ip hash>'. Shared by every
-- host on the ledger, so limits hold across hosts.
CREATE TABLE rate_windows (
  scope        TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  count        INTEGER NOT NULL,
  PRIMARY KEY (scope, window_start)
);

-- One record per account and Idempotency-Key (spec §3.1).
CREATE TABLE idempotency (
  account_id  TEXT NOT NULL REFERENCES accounts(id),
  key         TEXT NOT NULL,
  fingerprint TEXT NOT NULL,                -- SHA-256 of the canonical request
  state       TEXT NOT NULL CHECK (state IN ('pending','completed','failed')),
  request_id  TEXT NOT NULL,                -- the attempt that owns the record
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,             -- created_at + retention
  status      INTEGER,                      -- completed: the retained answer
  headers     TEXT,
  body        BLOB,
  mode        TEXT,
  PRIMARY KEY (account_id, key)
);

-- Every decision attempt that reserved credits. A pending row carries a
-- lease; a host that dies leaves it to be settled (failed and refunded) by
-- the next request of the account or by the sweeper once the lease ends.
CREATE TABLE requests (
  id            TEXT PRIMARY KEY,           -- the platform request id
  account_id    TEXT NOT NULL REFERENCES accounts(id),
  key_id        TEXT,                       -- NULL for the playground
  source        TEXT NOT NULL CHECK (source IN ('api','playground')),
  model         TEXT NOT NULL,
  questions     INTEGER NOT NULL,
  cost          INTEGER NOT NULL,
  charged       INTEGER NOT NULL DEFAULT 0,
  state         TEXT NOT NULL CHECK (state IN ('pending','succeeded','failed')),
  status        INTEGER,
  error_code    TEXT,
  input_tokens  INTEGER,
  output_tokens INTEGER,
  idem_key      TEXT,
  lease_until   INTEGER NOT NULL,
  created_at    INTEGER NOT NULL,
  finished_at   INTEGER
);
CREATE INDEX requests_account_time ON requests(account_id, created_at);
CREATE INDEX requests_pending ON requests(state, lease_until) WHERE state = 'pending';
