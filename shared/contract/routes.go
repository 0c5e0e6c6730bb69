package contract

// Auth is what a route asks of its caller before its function does
// anything else. The function checks it; the table says it so that a
// reader, the route docs and the Workers generator need not read code.
type Auth string

const (
	// Public routes take no credential.
	Public Auth = "public"
	// APIKey routes take Authorization: Bearer <API key> (spec §4).
	APIKey Auth = "api_key"
	// Session routes take the console's session cookie and refuse a Bearer.
	Session Auth = "session"
)

// Route maps one method and path pattern to a function. A pattern segment
// starting with ':' matches any one non-empty segment.
type Route struct {
	Method   string `json:"method"`
	Pattern  string `json:"pattern"`
	Function string `json:"function"`
	Auth     Auth   `json:"auth"`
	// MaxBody is the largest request body the host reads for this route (0:
	// DefaultMaxBody); a larger one is refused with 413 body_too_large
	// before any function runs, so it costs nothing.
	MaxBody int64 `json:"maxBody"`
	// Charges marks the routes that spend credits (the decision and the
	// playground). Their answers say what they charged (X-Service-Credits,
	// spec §4.8), so the host's own refusals, before any function runs
	// (413 body_too_large, 503 overloaded, …), say 0.
	Charges bool `json:"charges,omitempty"`
}

// DecisionBodyLimit is the raw body limit of decision requests (spec §8).
const DecisionBodyLimit = 65536

// DefaultMaxBody bounds the bodies of routes that set no limit of their own.
const DefaultMaxBody = 1 << 20

// Routes is every route the gateway serves. A route whose module is not
// built answers 503 function_unavailable.
var Routes = []Route{
	{"POST", "/v1/service", "decide", APIKey, DecisionBodyLimit, true},
	{"GET", "/v1/models", "models", APIKey, 0, false},
	{"GET", "/api/service/config", "config", Public, 0, false},
	{"GET", "/api/service/keys", "keys", Session, 0, false},
	{"POST", "/api/service/keys", "keys", Session, 4096, false},
	{"DELETE", "/api/service/keys/:id", "keys", Session, 0, false},
	{"GET", "/api/service/usage", "usage", Session, 0, false},
	{"POST", "/api/service/playground", "playground", Session, DecisionBodyLimit, true},
	{"POST", "/api/service/auth/signin", "auth", Public, 4096, false},
	{"GET", "/api/service/auth/verify", "auth", Public, 0, false},
	{"POST", "/api/service/auth/verify", "auth", Public, 4096, false},
	{"POST", "/api/service/auth/signout", "auth", Session, 0, false},
	{"GET", "/api/service/auth/session", "auth", Session, 0, false},
}
