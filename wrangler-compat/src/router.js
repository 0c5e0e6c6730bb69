// Route matching, as the wazero host does it (wasm-host/routes.Match), so
// that a path and method reach the same function, or the same 404 or 405, on
// both hosts.

/**
 * requestPath is a request URL's path as the wazero host routes it and
 * hands it to a module (Go's url.URL.Path): percent-escapes decoded, %2F
 * included, so /v1/%73ervice is /v1/service on both hosts. A path whose
 * escapes do not decode stays as sent; it matches no route (Go refuses
 * such a request line before routing).
 */
export function requestPath(url) {
  const path = url.pathname;
  if (!path.includes("%")) return path;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * match finds the route for method and path. When the path matches some
 * routes but not the method, it returns { route: null, allow } with the
 * methods that would match, for a 405 with Allow. HEAD is served by a GET
 * route.
 */
export function match(table, method, path) {
  const allow = [];
  for (const route of table) {
    if (!matchPath(route.pattern, path)) continue;
    if (route.method === method || (method === "HEAD" && route.method === "GET")) return { route, allow: [] };
    allow.push(route.method);
  }
  return { route: null, allow };
}

/** matchPath compares segment by segment; ':name' matches one non-empty segment. */
function matchPath(pattern, path) {
  const ps = pattern.split("/");
  const qs = path.split("/");
  if (ps.length !== qs.length) return false;
  return ps.every((p, i) => p === qs[i] || (p.startsWith(":") && qs[i] !== ""));
}
