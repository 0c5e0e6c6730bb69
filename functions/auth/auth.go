// Package auth is the console's sign-in (the spec leaves it open, §5 rule
// 8; schema/console.md describes it): e-mail sign-in links.
//
//	POST /api/service/auth/signin   {"email":…} → a single-use link by mail
//	POST /api/service/auth/verify   {"token":…} → spends the link: session cookie
//	GET  /api/service/auth/verify   ?token=… → the console, the token in its fragment
//	POST /api/service/auth/signout  ends the session server-side
//	GET  /api/service/auth/session  who is signed in
//
// Answers never depend on whether an address already has an account: a
// link is mailed the same way to any valid address, and the account is
// created when its owner opens the link.
package auth

import (
	"strconv"
	"strings"

	"decisiongateway/console/gate"
	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/contract"
	"decisiongateway/shared/jsonw"
	"decisiongateway/shared/keys"
	"decisiongateway/shared/platform"
	"decisiongateway/shared/policy"
	"decisiongateway/shared/settings"
)

// Handle dispatches on the route's path.
func Handle(env *platform.Env, req *abi.Request) abi.Response {
	switch req.Path {
	case "/api/service/auth/signin":
		return signIn(env, req)
	case "/api/service/auth/verify":
		if req.Method == "POST" {
			return verify(env, req)
		}
		return openLink(env, req)
	case "/api/service/auth/signout":
		return signOut(env, req)
	}
	return session(env, req)
}

func signIn(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	if r, ok := gate.CheckOrigin(&s, req); !ok {
		return r
	}
	email, ok := gate.StringField(req.Body, "email")
	if !ok {
		return policy.Error(contract.InvalidRequest, `send a JSON object {"email": <address>}`)
	}
	mailURL := env.Config.Get("MAIL_URL")
	if mailURL == "" {
		return policy.Error(contract.MailNotConfigured, "this deployment sends no mail; an operator can open a session with `gateway admin session EMAIL`")
	}
	store := accounts.New(env.Ledger)
	token, err := store.RequestSignIn(email, gate.ClientHash(req))
	if err != nil {
		return gate.Failure(err)
	}
	to, _ := accounts.NormalizeEmail(email)
	nonce, _ := gate.StringField(req.Body, "nonce")
	link := consoleLink(&s, token, nonce)
	if err := sendLink(env, mailURL, to, link); err != "" {
		env.Warn("sign-in mail not sent", "reason", err)
		return policy.Error(contract.MailFailed, "the sign-in mail could not be sent; try again later")
	}
	var w jsonw.Writer
	w.Open('{')
	w.FieldBool("sent", true)
	w.FieldInt("expiresIn", accounts.SignInTTL)
	if s.Dev {
		// Tells the console to point a newcomer at the dev outbox.
		w.FieldBool("devOutbox", true)
	}
	w.Close('}')
	return policy.JSON(202, w.B)
}

// A link is spent only by a POST from the console, never by opening it.
//
// The mail's link is the console with the token in its fragment
// (consoleLink), which no server, proxy log or Referer header sees. The
// console, opened on it, spends the token with POST /api/service/auth/verify
// under the exact Origin: at once when the link carries the nonce this
// browser sent when it asked (consoleLink), after the person confirms
// otherwise. So a mail scanner that fetches
// (GET or HEAD) or even renders the link cannot use it up, and a page
// elsewhere cannot sign its visitor in to the attacker's account (login
// CSRF) without that person agreeing to sign in. Links of the earlier form
// (GET /api/service/auth/verify?token=…) still work: openLink sends them to
// the console the same way, spending nothing.

// consoleLink is the link a sign-in mail carries. nonce is what the console
// that asked for it sent ({"nonce":…}, 16 to 64 lower-case letters and
// digits, kept by that browser): the link carries it back (&n=…), so the
// console knows the link is the one this browser asked for, not one an
// attacker asked for and sent the browser to while a request of its own
// was fresh. Anything else is left out.
func consoleLink(s *settings.Settings, token, nonce string) string {
	link := strings.TrimSuffix(s.Origin, "/") + "/#signin=" + token
	if validNonce(nonce) {
		link += "&n=" + nonce
	}
	return link
}

func validNonce(n string) bool {
	if len(n) < 16 || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// openLink answers GET (and HEAD) of a link of the earlier form: a redirect
// to the console with the token in the fragment, nothing spent.
func openLink(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	token := queryValue(req.Query, "token")
	if _, ok := keys.Parse(keys.SignIn, token); !ok {
		return redirect(strings.TrimSuffix(s.Origin, "/") + "/?signin=invalid")
	}
	return redirect(consoleLink(&s, token, ""))
}

// verify spends the link's token (one UPDATE … RETURNING: a link works
// once), signs the address in and sets the session cookie. welcome is the
// credits this first verification of the account granted, for the console
// to announce.
func verify(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	if r, ok := gate.CheckOrigin(&s, req); !ok {
		return r
	}
	token, ok := gate.StringField(req.Body, "token")
	if !ok {
		return policy.Error(contract.InvalidRequest, `send a JSON object {"token": <the link's token>}`)
	}
	store := accounts.New(env.Ledger)
	email, ok, err := store.ConsumeSignIn(token)
	switch {
	case err != nil:
		return gate.Failure(err)
	case !ok:
		return policy.Error(contract.SigninLinkInvalid, "this sign-in link is unknown, already used or expired; ask for a new one")
	}
	v, secret, err := store.SignIn(email, int64(s.WelcomeCredits))
	if err != nil {
		return gate.Failure(err)
	}
	var w jsonw.Writer
	w.Open('{')
	w.FieldBool("signedIn", true)
	writeAccount(&w, v.ID, email)
	w.FieldInt("welcome", v.Granted)
	w.Close('}')
	resp := policy.JSON(200, w.B)
	resp.Headers.Add("set-cookie", gate.SessionSetCookie(&s, secret))
	return resp
}

func signOut(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	if r, ok := gate.CheckOrigin(&s, req); !ok {
		return r
	}
	if secret := gate.SessionCookieValue(req); secret != "" {
		if err := accounts.New(env.Ledger).EndSession(secret); err != nil {
			return gate.Failure(err)
		}
	}
	resp := policy.JSON(200, []byte(`{"signedOut":true}`))
	resp.Headers.Add("set-cookie", gate.ClearSessionCookie(&s))
	return resp
}

// session answers who is signed in. Being signed out is an ordinary
// answer here (signedIn false), not an error: the console asks on load.
func session(env *platform.Env, req *abi.Request) abi.Response {
	if req.Headers.Has("authorization") {
		return policy.Error(contract.BearerNotAccepted, "this endpoint takes a signed-in browser session; an Authorization header (API key) is not accepted here")
	}
	var w jsonw.Writer
	w.Open('{')
	secret := gate.SessionCookieValue(req)
	sess, ok, err := accounts.Session{}, false, error(nil)
	if secret != "" {
		sess, ok, err = accounts.New(env.Ledger).LookupSession(secret)
		if err != nil {
			return gate.Failure(err)
		}
	}
	w.FieldBool("signedIn", ok)
	if ok {
		writeAccount(&w, sess.AccountID, sess.Email)
		w.FieldInt("expiresAt", sess.ExpiresAt)
	}
	w.Close('}')
	return policy.JSON(200, w.B)
}

// writeAccount writes the signed-in account member of the session and
// verify answers: "account":{"id","email"}.
func writeAccount(w *jsonw.Writer, id, email string) {
	w.Key("account")
	w.Open('{')
	w.FieldString("id", id)
	w.FieldString("email", email)
	w.Close('}')
}

func redirect(location string) abi.Response {
	return abi.Response{Status: 303, Headers: abi.Headers{
		{Name: "location", Value: location},
		// The link's token is in the URL that led here: keep it out of
		// Referer headers.
		{Name: "referrer-policy", Value: "no-referrer"},
	}}
}

// queryValue returns the first value of name in a raw query. Tokens are
// base32 with underscores, so no unescaping is needed: a value that would
// need it is not a token anyway.
func queryValue(query, name string) string {
	for _, part := range strings.Split(query, "&") {
		if k, v, ok := strings.Cut(part, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// sendLink posts the sign-in mail to the operator's mail endpoint
// (schema/mail.md) and returns "" on success or why it failed. The link is
// a bearer secret until used, so it is never logged here.
func sendLink(env *platform.Env, mailURL, to, link string) string {
	from := env.Config.Get("SERVICE_MAIL_FROM") // the host fills in its default
	minutes := strconv.Itoa(accounts.SignInTTL / 60)
	var w jsonw.Writer
	w.Open('{')
	w.FieldString("from", from)
	w.FieldString("to", to)
	w.FieldString("subject", "Your Decision Gateway sign-in link")
	w.FieldString("text", "Open this link within "+minutes+" minutes to sign in to the Decision Gateway console:\n\n"+link+
		"\n\nThe link works once. If you did not ask for it, ignore this mail.\n")
	w.FieldString("html", `<p>Open this link within `+minutes+` minutes to sign in to the Decision Gateway console:</p><p><a href="`+
		htmlEscape(link)+`">Sign in</a></p><p>The link works once. If you did not ask for it, ignore this mail.</p>`)
	w.Close('}')
	res, err := env.Transport.Fetch(&abi.FetchRequest{
		Method:     "POST",
		URL:        mailURL,
		Headers:    abi.Headers{{Name: "content-type", Value: "application/json"}},
		Body:       w.B,
		TimeoutMS:  10000,
		MaxBytes:   64 << 10,
		Credential: "mail",
	})
	switch {
	case err != nil:
		return err.Error()
	case res.ErrKind != "":
		return res.ErrKind
	case res.Status < 200 || res.Status > 299:
		return "mail endpoint answered " + strconv.Itoa(res.Status)
	}
	return ""
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;").Replace(s)
}
