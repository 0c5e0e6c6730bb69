// Package auth is the console's sign-in (the spec leaves it open, §5 rule
// 8; schema/console.md describes it): e-mail sign-in links.
//
//	POST /api/service/auth/signin   {"email":…} → a single-use link by mail
//	GET  /api/service/auth/verify   ?token=… → session cookie, back to the console
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
		return verify(env, req)
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
	link := strings.TrimSuffix(s.Origin, "/") + "/api/service/auth/verify?token=" + token
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

// verify spends the link's token, signs the address in and sends the
// browser to the console. Every outcome is a redirect, because the caller
// is a person who clicked a link in a mail; the console reads the signin
// query parameter to explain a failure, and ?welcome=N to greet an account
// whose first verification this was with the N credits it was granted.
func verify(env *platform.Env, req *abi.Request) abi.Response {
	s := settings.Read(env.Config)
	home := strings.TrimSuffix(s.Origin, "/") + "/"
	store := accounts.New(env.Ledger)
	email, ok, err := store.ConsumeSignIn(queryValue(req.Query, "token"))
	switch {
	case err != nil:
		return redirect(home+"?signin=error", "")
	case !ok:
		return redirect(home+"?signin=invalid", "")
	}
	v, secret, err := store.SignIn(email, int64(s.WelcomeCredits))
	if err != nil {
		return redirect(home+"?signin=error", "")
	}
	if v.Granted > 0 {
		home += "?welcome=" + strconv.FormatInt(v.Granted, 10)
	}
	return redirect(home, gate.SessionSetCookie(&s, secret))
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
		w.Key("account")
		w.Open('{')
		w.FieldString("id", sess.AccountID)
		w.FieldString("email", sess.Email)
		w.Close('}')
		w.FieldInt("expiresAt", sess.ExpiresAt)
	}
	w.Close('}')
	return policy.JSON(200, w.B)
}

func redirect(location, setCookie string) abi.Response {
	r := abi.Response{Status: 303, Headers: abi.Headers{
		{Name: "location", Value: location},
		// The link's token is in this URL: keep it out of Referer headers.
		{Name: "referrer-policy", Value: "no-referrer"},
	}}
	if setCookie != "" {
		r.Headers.Add("set-cookie", setCookie)
	}
	return r
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
	from := env.Config.Get("SERVICE_MAIL_FROM")
	if from == "" {
		from = "Decision Gateway <no-reply@localhost>"
	}
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
