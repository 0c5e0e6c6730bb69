package hostconfig

import (
	"fmt"
	"strings"

	"decisiongateway/shared/contract"
)

// The builds of the functions a host can run (GATEWAY_MODULES).
const (
	ModulesABI    = "abi"
	ModulesSocket = "socket"
)

// checkModules reads GATEWAY_MODULES and the functions folder that goes
// with it. A socket build reaches its ledger over HTTP from inside the
// module, so it cannot use an embedded file.
func (c *Config) checkModules(dir string) error {
	switch c.Modules {
	case ModulesABI:
		c.FunctionsDir = or(dir, "build/functions")
	case ModulesSocket:
		c.FunctionsDir = or(dir, "build/functions-socket")
		if strings.HasPrefix(c.LedgerURL, "file:") {
			return fmt.Errorf("GATEWAY_MODULES=socket: the modules reach the ledger themselves, over HTTP; set LIBSQL_URL to sqld or Turso (http://, https:// or libsql://), not %q", redactQuery(c.LedgerURL))
		}
	default:
		return fmt.Errorf("GATEWAY_MODULES=%q: want abi or socket", c.Modules)
	}
	return nil
}

// ModuleEnviron is the environment of a socket build's module: the settings
// any module may read, and the secrets it needs to reach the ledger, the
// upstream and the mail service itself. Only the socket build gets them
// (schema/socket.md, "Secrets").
func (c *Config) ModuleEnviron() []string {
	var env []string
	for _, name := range contract.ModuleSettings() {
		if v := c.plain[name]; v != "" {
			env = append(env, name+"="+v)
		}
	}
	for name, v := range map[string]string{
		"LIBSQL_URL":        c.LedgerURL,
		"LIBSQL_AUTH_TOKEN": c.LedgerToken,
		"UPSTREAM_API_KEY":  c.UpstreamAPIKey,
		"MAIL_API_KEY":      c.MailAPIKey,
	} {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

func redactQuery(url string) string {
	base, _, _ := strings.Cut(url, "?")
	return base
}
