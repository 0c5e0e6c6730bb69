// The config import: deployment settings by name, read from the Worker's
// checked env (settings.js; wrangler [vars] and secrets). Modules are
// untrusted with secrets (schema/abi.md): the host applies credentials
// itself.
//
// Like the wazero host (wasm-host/hostconfig), a module reads only the
// settings the contract marks module-readable, with the default filled in
// for one that is unset, so the guest never needs a default of its own
// (schema/settings.md). The secret rule of schema/abi.md is applied as well,
// so a secret stays unreadable even if one is ever marked by mistake. The
// table and the rule are generated from shared/contract (contract.gen.js).

import { SECRET_NAMES, SECRET_SUFFIXES, SETTINGS } from "./contract.gen.js";
import { text } from "./settings.js";

const MODULE = new Map(SETTINGS.filter((s) => s.module).map((s) => [s.name, s]));

/** isSecret reports whether a name is a secret under schema/abi.md. */
export function isSecret(name) {
  return SECRET_NAMES.includes(name) || SECRET_SUFFIXES.some((s) => name.endsWith(s));
}

/**
 * config returns the value of setting name: its checked value, its default
 * when unset, or "" for a name modules may not read, a secret, or a value
 * that is not plain (bindings such as env.AI are objects).
 */
export function config(env, name) {
  const row = MODULE.get(name);
  if (!row || isSecret(name)) return "";
  return text(env[name]) || row.default;
}
