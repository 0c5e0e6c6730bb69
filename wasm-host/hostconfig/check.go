package hostconfig

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"decisiongateway/shared/contract"
	"decisiongateway/shared/validate"
)

// Load reads every setting of contract.Settings through getenv, once, at
// start: an unset (empty) setting takes its default; a set one must pass
// its kind's check, or Load fails with an error that names it. The values
// come back in their canonical spelling (an enum as the table spells it).
// wrangler-compat/src/settings.js applies the same rules on Workers.
func Load(getenv func(string) string) (map[string]string, error) {
	values := make(map[string]string, len(contract.Settings))
	for i := range contract.Settings {
		s := &contract.Settings[i]
		v := getenv(s.Name)
		if v == "" {
			values[s.Name] = s.Default
			continue
		}
		got, err := Check(s, v)
		if err != nil {
			return nil, err
		}
		values[s.Name] = got
	}
	return values, nil
}

// Check checks a set value of s by its kind and returns it in its
// canonical spelling; the error names the setting and what it wants.
func Check(s *contract.Setting, v string) (string, error) {
	bad := func() (string, error) {
		return "", fmt.Errorf("%s=%q: want %s", s.Name, v, contract.RuleOf(s))
	}
	switch s.Kind {
	case contract.Text:
		return v, nil
	case contract.Int:
		if n, err := strconv.Atoi(v); err != nil || n < s.Min || n > contract.MaxInt {
			return bad()
		}
		return v, nil
	case contract.Duration:
		if d, err := time.ParseDuration(v); err != nil || d <= 0 {
			return bad()
		}
		return v, nil
	case contract.Enum:
		for _, want := range s.Values {
			if strings.EqualFold(v, want) {
				return want, nil
			}
		}
		return bad()
	case contract.Flag:
		if v != "0" && v != "1" {
			return bad()
		}
		return v, nil
	case contract.URL:
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return bad()
		}
		if u.User != nil {
			// Egress never sends a URL's user:password@, so every call
			// would be denied; the value is not repeated, its password
			// being a secret.
			return "", fmt.Errorf("%s=%q: want %s (a credential goes in its _API_KEY setting)", s.Name, hideUserinfo(v), contract.RuleOf(s))
		}
		return v, nil
	case contract.Origin:
		return v, checkOrigin(s.Name, v)
	case contract.Model:
		// The default is inserted into requests that name no model, so it
		// must be a name the gateway accepts in a request.
		if !validate.ValidModel(v) {
			return bad()
		}
		return v, nil
	case contract.CIDRs:
		if _, err := ParseTrustedProxies(v); err != nil {
			return "", fmt.Errorf("%s=%q: %w", s.Name, v, err)
		}
		return v, nil
	}
	return "", fmt.Errorf("%s: unknown kind %q", s.Name, s.Kind)
}

// hideUserinfo is a URL with everything before the last @ of its authority
// shown as …@, so a refusal can name the URL without its credential.
func hideUserinfo(v string) string {
	scheme, rest, ok := strings.Cut(v, "://")
	if !ok {
		return v
	}
	authority := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = i
	}
	if at := strings.LastIndexByte(rest[:authority], '@'); at >= 0 {
		rest = "…@" + rest[at+1:]
	}
	return scheme + "://" + rest
}
