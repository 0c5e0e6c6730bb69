// Go duration strings ("30s", "1m30s", "250ms"), the form the wazero host's
// settings take (GATEWAY_REQUEST_TIMEOUT), so one value configures both hosts.

const UNIT_MS = { ns: 1e-6, us: 1e-3, "µs": 1e-3, "μs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * parseDuration returns the duration in milliseconds, or NaN for text that
 * Go's time.ParseDuration would refuse (a bare "0" is 0).
 */
export function parseDuration(text) {
  if (text === "0") return 0;
  const m = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(text);
  if (!m) return NaN;
  let total = 0;
  for (const [, num, unit] of m[2].matchAll(/(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(num) * UNIT_MS[unit];
  }
  return m[1] === "-" ? -total : total;
}
