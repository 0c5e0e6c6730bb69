// The config import: deployment settings by name, read from the Worker's env
// (wrangler [vars] and secrets). Modules are untrusted with secrets
// (schema/abi.md): the host applies credentials itself.
//
// Like the wazero host (wasm-host/hostconfig), a module reads only the
// settings on an allow-list, so a new variable or binding never leaks into a
// module by accident; the secret rule of schema/abi.md is applied as well, so
// a secret stays unreadable even if it is ever put on the list by mistake.
// The list is not kept here: the Workers generator (wrangler-compat/workers)
// writes hostconfig.Exposed() into each function Worker, which passes it in.

/** Names that are secrets whatever their suffix. */
const SECRET_NAMES = new Set(["UPSTREAM_API_KEY", "LIBSQL_AUTH_TOKEN", "LIBSQL_URL", "MAIL_API_KEY"]);

/** Suffixes that mark a name as a secret. */
const SECRET_SUFFIXES = ["_SECRET", "_TOKEN", "_KEY"];

/** isSecret reports whether a name is a secret under schema/abi.md. */
export function isSecret(name) {
  return SECRET_NAMES.has(name) || SECRET_SUFFIXES.some((s) => name.endsWith(s));
}

/**
 * config returns the value of setting name, or "" when it is unset, not in
 * the set exposed, a secret, or not a plain value (bindings such as env.AI
 * are objects). Numbers and booleans from [vars] read as their text.
 */
export function config(env, name, exposed) {
  if (!exposed?.has(name) || isSecret(name)) return "";
  const v = env[name];
  switch (typeof v) {
    case "string":
      return v;
    case "number":
    case "boolean":
      return String(v);
    default:
      return "";
  }
}
