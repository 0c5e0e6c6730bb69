-- Gateway-wide facts that belong to no account: the deployment's identity,
-- one-time bootstrap markers and the like. Bookkeeping of the migrations
-- themselves (schema_migrations) is created by the migrator, not here.
CREATE TABLE gateway_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
