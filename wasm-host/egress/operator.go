package egress

import "decisiongateway/shared/abi"

// ForOperator is the client a deployment runs with: only the upstream's and
// the mail service's origins are reachable, and each key is sent to its own
// origin alone. The host and the socket build's modules both use it, so the
// rule is written once.
func ForOperator(upstreamURL, upstreamKey, mailURL, mailKey string) *Client {
	var allowed []string
	for _, u := range []string{upstreamURL, mailURL} {
		if o := Origin(u); o != "" {
			allowed = append(allowed, o)
		}
	}
	return New(allowed, map[string]Credential{
		abi.CredentialUpstream: {Token: upstreamKey, Origin: Origin(upstreamURL)},
		"mail":                 {Token: mailKey, Origin: Origin(mailURL)}, // schema/mail.md
	})
}
