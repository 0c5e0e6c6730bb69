package openapi

import "decisiongateway/shared/contract"

// The document's components: credentials, parameters, headers and body
// schemas, written from the spec and schema/*.md.

var securitySchemes = map[string]any{
	"apiKey": map[string]any{
		"type": "http", "scheme": "bearer", "bearerFormat": "dgk_<account>_<secret>",
		"description": "A platform API key (spec §5): Authorization: Bearer <API_KEY>. It spends its account's credits.",
	},
	"session": map[string]any{
		"type": "apiKey", "in": "cookie", "name": "dg_session",
		"description": "The console's session cookie, set by POST /api/service/auth/verify (schema/console.md). A Bearer key never substitutes for it; POST and DELETE also need Origin equal to SERVICE_ORIGIN.",
	},
}

var parameters = map[string]any{
	"IdempotencyKey": map[string]any{
		"name": "Idempotency-Key", "in": "header", "required": false,
		"description": "A new key per logical operation; the same key and body recover an uncertain result within 24 hours (spec §3.1).",
		"schema":      map[string]any{"type": "string", "pattern": "^[\\x21-\\x7E]{1,255}$"},
	},
	"GatewayVersion": map[string]any{
		"name": "X-Gateway-Version", "in": "header", "required": false,
		"description": "Pins a function version for a smoke test: stable, canary or <function>@<12 hex> on the wazero host, a Workers version id on Workers.",
		"schema":      map[string]any{"type": "string"},
	},
	"Origin": map[string]any{
		"name": "Origin", "in": "header", "required": true,
		"description": "Exactly SERVICE_ORIGIN, as browsers send it on same-origin writes; anything else is 403 origin_not_allowed.",
		"schema":      map[string]any{"type": "string"},
	},
	"KeyID": map[string]any{
		"name": "id", "in": "path", "required": true, "description": "The key's id, as listed.",
		"schema": map[string]any{"type": "string", "minLength": 1},
	},
	"SignInToken": map[string]any{
		"name": "token", "in": "query", "required": false, "description": "The sign-in link's token (dgl_…).",
		"schema": map[string]any{"type": "string"},
	},
}

// headerNames are the wire names of the header components.
var headerNames = map[string]string{
	"XRequestId": "X-Request-Id", "CacheControl": "Cache-Control", "XFunctionVersion": "X-Function-Version",
	"XUpstreamRequestId": "X-Upstream-Request-Id", "XVendorRequestId": "X-Vendor-Request-Id",
	"XServiceCredits": "X-Service-Credits", "XRateLimitLimit": "X-RateLimit-Limit",
	"XRateLimitRemaining": "X-RateLimit-Remaining", "XRateLimitReset": "X-RateLimit-Reset",
	"XUpstreamRateLimitLimit": "X-Upstream-RateLimit-Limit", "XUpstreamRateLimitRemaining": "X-Upstream-RateLimit-Remaining",
	"XUpstreamRateLimitReset": "X-Upstream-RateLimit-Reset", "RetryAfter": "Retry-After",
	"XIdempotencyReplayed": "X-Idempotency-Replayed", "XServiceResponseMode": "X-Service-Response-Mode",
	"Location": "Location", "SetCookie": "Set-Cookie", "ReferrerPolicy": "Referrer-Policy",
	"WWWAuthenticate": "WWW-Authenticate", "AccessControlAllowOrigin": "Access-Control-Allow-Origin",
}

// decisionHeaders are the response headers of spec §4.8, on every answer
// of the decision and playground routes.
var decisionHeaders = []string{"XUpstreamRequestId", "XVendorRequestId", "XServiceCredits", "XRateLimitLimit",
	"XRateLimitRemaining", "XRateLimitReset", "XUpstreamRateLimitLimit", "XUpstreamRateLimitRemaining",
	"XUpstreamRateLimitReset", "RetryAfter", "XIdempotencyReplayed", "XServiceResponseMode"}

// modelsHeaders are on every answer of GET /v1/models once the key and the
// account's listing window passed: the window, and what the upstream's
// answer forwards (spec §4.8's forwarding rules).
var modelsHeaders = []string{"XUpstreamRequestId", "XVendorRequestId", "XRateLimitLimit", "XRateLimitRemaining",
	"XRateLimitReset", "XUpstreamRateLimitLimit", "XUpstreamRateLimitRemaining", "XUpstreamRateLimitReset", "RetryAfter"}

func header(desc string, schema map[string]any, required bool) map[string]any {
	h := map[string]any{"description": desc, "schema": schema}
	if required {
		h["required"] = true
	}
	return h
}

var (
	str     = map[string]any{"type": "string"}
	integer = map[string]any{"type": "string", "pattern": "^[0-9]+$"}
)

var headers = map[string]any{
	"XRequestId":         header("The platform request and ledger id; a replay keeps the original's.", str, true),
	"CacheControl":       header("Every answer: no-store (spec §1.4).", map[string]any{"const": "no-store"}, true),
	"XFunctionVersion":   header("The function module that answered: <function>@<first 12 hex of its SHA-256>.", str, false),
	"XUpstreamRequestId": header("The upstream's id: x-vendor-request-id, x-request-id or request-id, in that order.", str, false),
	"XVendorRequestId":   header("The vendor's tracking header, forwarded.", str, false),
	"XServiceCredits": header("Credits charged by this call: 0 for a replay or a confirmed refund; omitted when the charge could not be recorded (omission is not zero).",
		integer, false),
	"XRateLimitLimit":             header("The account's window limit, when the check passed.", integer, false),
	"XRateLimitRemaining":         header("Attempts left in the window, when the check passed.", integer, false),
	"XRateLimitReset":             header("Unix seconds at which the window resets.", integer, false),
	"XUpstreamRateLimitLimit":     header("The upstream's limit, forwarded.", str, false),
	"XUpstreamRateLimitRemaining": header("The upstream's remaining count, forwarded.", str, false),
	"XUpstreamRateLimitReset":     header("The upstream's reset, forwarded.", str, false),
	"RetryAfter":                  header("Seconds, or an HTTP date kept exactly from the upstream.", str, false),
	"XIdempotencyReplayed":        header("true on a successful replay.", map[string]any{"const": "true"}, false),
	"XServiceResponseMode": header("How the answer was made (spec §4.8).",
		map[string]any{"type": "string", "enum": []any{"vendor-native", "edge-runtime", "router-adapted", "legacy-cache"}}, false),
	"Location":                 header("The console: SERVICE_ORIGIN/#signin=TOKEN for a well-formed link (nothing is spent: the console spends it), SERVICE_ORIGIN/?signin=invalid for a malformed one.", str, true),
	"SetCookie":                header("dg_session=…; Path=/; HttpOnly; SameSite=Lax (Secure on https); cleared by sign-out.", str, false),
	"ReferrerPolicy":           header("no-referrer: the link's token never leaves in a Referer.", map[string]any{"const": "no-referrer"}, true),
	"WWWAuthenticate":          header("The API key's scheme (RFC 6750), on the platform's own 401 (missing_api_key, invalid_api_key); a forwarded upstream 401 has none.", map[string]any{"const": `Bearer realm="decision-gateway"`}, false),
	"AccessControlAllowOrigin": header("Any origin may read the document.", map[string]any{"const": "*"}, true),
}

func obj(required []string, props map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func arr(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

func nullable(t string) map[string]any { return map[string]any{"type": []any{t, "null"}} }

var (
	num       = map[string]any{"type": "number"}
	intg      = map[string]any{"type": "integer"}
	boolean   = map[string]any{"type": "boolean"}
	day       = map[string]any{"type": "string", "format": "date"}
	anyJSON   = map[string]any{"description": "Any JSON value."}
	probs     = map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "number", "minimum": 0, "maximum": 1}}
	shortName = map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "pattern": "\\S"}
)

// schemas are the body schemas. Objects allow members they do not name:
// upstream answers and models carry extension fields (spec §2.3, §2.5).
func (b builder) schemas(errs []ErrorCode) map[string]any {
	var all []any
	for _, e := range errs {
		all = append(all, e.Code)
	}
	stateLike := map[string]any{"type": []any{"string", "object", "array", "null"}}
	return map[string]any{
		"ErrorCode": map[string]any{"type": "string", "enum": all, "description": "Every platform error code; x-error-codes gives each its status."},
		"PlatformError": obj([]string{"error"}, map[string]any{"error": obj([]string{"code", "message"}, map[string]any{
			"code": ref("schemas", "ErrorCode"), "message": map[string]any{"type": "string", "description": "For people; may change."},
		})}),
		"UpstreamError": map[string]any{"type": "object", "description": "An upstream's JSON error, forwarded as the upstream sent it (X-Service-Error-Source: upstream)."},
		"DecisionRequest": map[string]any{
			"type": "object", "required": []any{"state", "questions"},
			"description": "At most 65,536 bytes of UTF-8 JSON, nesting at most 32 deep, no duplicate keys (spec §2.1, §8). Extension members pass on the vendor path only.",
			"properties": map[string]any{
				"model":     map[string]any{"type": "string", "minLength": 1, "maxLength": 128, "description": "Alias or version id; omitted, the deployment default."},
				"state":     stateLike,
				"questions": map[string]any{"type": "object", "minProperties": 1, "maxProperties": 32, "additionalProperties": ref("schemas", "Question"), "propertyNames": shortName},
			},
		},
		"Question": map[string]any{"oneOf": []any{
			obj([]string{"type", "criteria"}, map[string]any{"type": map[string]any{"const": "choice"}, "instructions": stateLike,
				"criteria": map[string]any{"type": "object", "minProperties": 1, "maxProperties": 255, "propertyNames": shortName}}),
			obj([]string{"type", "criteria"}, map[string]any{"type": map[string]any{"const": "score"}, "instructions": stateLike,
				"criteria": map[string]any{"type": "array", "minItems": 2, "maxItems": 10}}),
			obj([]string{"type"}, map[string]any{"type": map[string]any{"const": "noul"}, "instructions": stateLike,
				"criteria": map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{"true": anyJSON, "false": anyJSON}}}),
		}},
		"DecisionResponse": obj([]string{"model", "answers"}, map[string]any{
			"model":   map[string]any{"type": "string", "description": "As resolved by the upstream."},
			"answers": map[string]any{"type": "object", "additionalProperties": ref("schemas", "Answer")},
			"usage": map[string]any{"type": []any{"object", "null"}, "properties": map[string]any{
				"input_tokens": nullable("integer"), "output_tokens": nullable("integer")}},
		}),
		"Answer": map[string]any{"oneOf": []any{
			obj([]string{"type", "choice", "probabilities", "confidence"}, map[string]any{"type": map[string]any{"const": "choice"},
				"choice": str, "probabilities": probs, "confidence": num}),
			obj([]string{"type", "score", "probabilities", "confidence", "legend"}, map[string]any{"type": map[string]any{"const": "score"},
				"score": map[string]any{"type": "number", "minimum": 0}, "probabilities": probs, "confidence": num,
				"legend": map[string]any{"type": "object", "additionalProperties": str}}),
			obj([]string{"type", "noul"}, map[string]any{"type": map[string]any{"const": "noul"},
				"noul": map[string]any{"type": "number", "minimum": 0, "maximum": 1}}),
		}},
		// The spec leaves the entries' types open (§2.5) and the vendor's
		// list comes back as sent: only the shape is promised.
		"ModelList": obj([]string{"models"}, map[string]any{"models": arr(obj([]string{"name"}, map[string]any{
			"name":         map[string]any{"description": "The model's name; a string on the edge catalog."},
			"description":  map[string]any{"description": "As the upstream gives it."},
			"release_date": map[string]any{"description": "As the upstream gives it; null on the edge catalog."}}))}),
		"Config": obj([]string{"contract", "status", "ready", "defaultModel", "upstream", "welcomeCredits", "billingAvailable", "docsUrl", "rateLimitPerMinute", "limits"}, map[string]any{
			"contract":     map[string]any{"const": Version},
			"status":       map[string]any{"type": "string", "enum": []any{"ready", "no_upstream", string(contract.LedgerUnavailable)}},
			"ready":        boolean,
			"defaultModel": str,
			"upstream": obj([]string{"kind", "responseMode", "emulator"}, map[string]any{
				"kind":         map[string]any{"enum": []any{"vendor", "edge", "router", nil}},
				"responseMode": map[string]any{"enum": []any{"vendor-native", "edge-runtime", "router-adapted", nil}},
				"emulator":     boolean}),
			"welcomeCredits": intg, "billingAvailable": boolean, "docsUrl": nullable("string"), "rateLimitPerMinute": intg,
			"limits": obj([]string{"bytes", "questions", "choiceOptions", "scoreLevels", "depth"}, map[string]any{
				"bytes": intg, "questions": intg, "choiceOptions": intg, "scoreLevels": intg, "depth": intg}),
		}),
		"Key": obj([]string{"id", "name", "prefix", "createdAt", "lastUsedAt"}, map[string]any{
			"id": str, "name": str, "prefix": map[string]any{"type": "string", "description": "dgk_<account>_ and four characters of the secret."},
			"createdAt": intg, "lastUsedAt": nullable("integer")}),
		"KeyList":    obj([]string{"keys", "maxActive"}, map[string]any{"keys": arr(ref("schemas", "Key")), "maxActive": intg}),
		"KeyCreate":  obj([]string{"name"}, map[string]any{"name": map[string]any{"type": "string", "minLength": 1, "maxLength": 64}}),
		"CreatedKey": map[string]any{"allOf": []any{ref("schemas", "Key"), obj([]string{"secret"}, map[string]any{"secret": map[string]any{"type": "string", "description": "Shown once."}})}},
		"RevokedKey": obj([]string{"id", "revoked"}, map[string]any{"id": str, "revoked": map[string]any{"const": true}}),
		"Usage": obj([]string{"balance", "window", "days", "requests"}, map[string]any{
			"balance": intg,
			"window":  obj([]string{"from", "to", "days"}, map[string]any{"from": day, "to": day, "days": map[string]any{"const": 30}}),
			"days": map[string]any{"type": "array", "minItems": 30, "maxItems": 30, "items": obj(
				[]string{"date", "requests", "succeeded", "failed", "pending", "credits", "questions"}, map[string]any{
					"date": day, "requests": intg, "succeeded": intg, "failed": intg, "pending": intg, "credits": intg, "questions": intg})},
			"requests": map[string]any{"type": "array", "maxItems": 50, "items": obj(
				[]string{"id", "createdAt", "finishedAt", "source", "keyId", "keyName", "keyPrefix", "model", "resolvedModel", "questions", "state", "status", "errorCode", "cost", "charged", "inputTokens", "outputTokens"},
				map[string]any{
					"id": str, "createdAt": intg, "finishedAt": nullable("integer"),
					"source": map[string]any{"enum": []any{"api", "playground"}},
					"keyId":  nullable("string"), "keyName": nullable("string"), "keyPrefix": nullable("string"),
					"model": str, "resolvedModel": nullable("string"), "questions": intg, "state": map[string]any{"enum": []any{"pending", "succeeded", "failed"}},
					"status": nullable("integer"), "errorCode": nullable("string"), "cost": intg, "charged": intg,
					"inputTokens": nullable("integer"), "outputTokens": nullable("integer"),
				})},
		}),
		"SignIn": obj([]string{"email"}, map[string]any{"email": map[string]any{"type": "string", "maxLength": 254},
			"nonce": map[string]any{"type": "string", "description": "The console's own: carried back in the link (&n=…); 16 to 64 lower-case letters and digits, else left out."}}),
		"SignInSent":   obj([]string{"sent", "expiresIn"}, map[string]any{"sent": map[string]any{"const": true}, "expiresIn": intg, "devOutbox": boolean}),
		"SignedOut":    obj([]string{"signedOut"}, map[string]any{"signedOut": map[string]any{"const": true}}),
		"SignInVerify": obj([]string{"token"}, map[string]any{"token": str}),
		"SignedIn": obj([]string{"signedIn", "account", "welcome"}, map[string]any{"signedIn": map[string]any{"const": true},
			"account": obj([]string{"id", "email"}, map[string]any{"id": str, "email": str}), "welcome": intg}),
		"SessionInfo": obj([]string{"signedIn"}, map[string]any{"signedIn": boolean,
			"account":   obj([]string{"id", "email"}, map[string]any{"id": str, "email": str}),
			"expiresAt": intg}),
		"Health": obj([]string{"status"}, map[string]any{"status": map[string]any{"const": "ok"}}),
		"Readiness": obj([]string{"ready", "checks"}, map[string]any{"ready": boolean,
			"checks": obj([]string{"ledger", "upstream", "functions"}, map[string]any{
				"ledger":    map[string]any{"enum": []any{"ok", "unreachable", "not_migrated", "not_configured"}},
				"upstream":  map[string]any{"enum": []any{"ok", "not_configured"}},
				"functions": map[string]any{"enum": []any{"ok", "loading", "missing"}}}),
			"missingFunctions": arr(str), "reasons": arr(str)}),
		"Document": obj([]string{"openapi", "info", "paths"}, map[string]any{"openapi": str}),
	}
}
