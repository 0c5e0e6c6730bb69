package auth_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"decisiongateway/shared/abi"
	"decisiongateway/shared/accounts"
	"decisiongateway/shared/keys"
	"decisiongateway/testkit/consoletest"
	"decisiongateway/testkit/testenv"
)

func TestMain(m *testing.M) { consoletest.Main(m) }

const origin = consoletest.Origin

func signinRequest(h *consoletest.Host, email string, headers ...string) consoletest.Reply {
	return h.Do("POST", "/api/service/auth/signin", `{"email":"`+email+`"}`, append([]string{"Origin", origin, "Content-Type", "application/json"}, headers...)...)
}

func TestSignInLinkVerifiesOnceGrantsWelcomeOnceAndSetsSecureCookie(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	r := signinRequest(h, "Ada@Example.com")
	if r.Status != 202 || r.JSON()["sent"] != true {
		t.Fatalf("sign-in: %s", r)
	}
	mails := h.Mails()
	if len(mails) != 1 || mails[0].To != "ada@example.com" || mails[0].Authorization != "Bearer "+consoletest.MailKey ||
		mails[0].Subject == "" || mails[0].From != "Decision Gateway <no-reply@localhost>" || !strings.Contains(mails[0].HTML, origin+"/#signin=dgl_") {
		t.Fatalf("mail %+v", mails)
	}
	link := h.LastLink("ada@example.com")
	// The token is in the fragment: no server or proxy log sees it.
	if !strings.HasPrefix(link, origin+"/#signin=") {
		t.Fatalf("link %q", link)
	}
	// Only the hash of the token is stored.
	token := link[strings.Index(link, "#signin=")+8:]
	if n := h.Rows("SELECT COUNT(*) FROM signin_tokens WHERE token_hash = ?", abi.String(keys.Hash(token)))[0][0].AsInt(); n != 1 {
		t.Fatal("token hash not stored")
	}
	if n := h.Rows("SELECT COUNT(*) FROM signin_tokens WHERE token_hash = ? OR email LIKE ?", abi.String(token), abi.String("%"+token+"%"))[0][0].AsInt(); n != 0 {
		t.Fatal("clear token stored")
	}

	r = h.Link(link)
	// The first verification tells the console the grant to announce.
	if r.Status != 200 || fmt.Sprint(r.JSON()["welcome"]) != "100" || r.JSON()["signedIn"] != true {
		t.Fatalf("verify: %s %v", r, r.Header)
	}
	set := r.Header.Get("Set-Cookie")
	for _, attr := range []string{"dg_session=dgs_", "; Path=/", "; HttpOnly", "; SameSite=Lax", "; Secure", "; Max-Age="} {
		if !strings.Contains(set, attr) {
			t.Errorf("Set-Cookie %q lacks %q", set, attr)
		}
	}
	cookie, _, _ := strings.Cut(set, ";")
	acct := h.Account(cookie)
	if h.Balance(acct) != 100 {
		t.Fatalf("balance %d after first verification", h.Balance(acct))
	}
	// The session is stored hashed.
	secret := strings.TrimPrefix(cookie, "dg_session=")
	if n := h.Rows("SELECT COUNT(*) FROM sessions WHERE token_hash = ? AND account_id = ?", abi.String(keys.Hash(secret)), abi.String(acct))[0][0].AsInt(); n != 1 {
		t.Fatal("session hash not stored")
	}
	s := h.Do("GET", "/api/service/auth/session", "", "Cookie", cookie).JSON()
	if s["signedIn"] != true || s["account"].(map[string]any)["email"] != "ada@example.com" {
		t.Fatalf("session %v", s)
	}

	// Single use.
	if r := h.Link(link); r.Status != 400 || r.Code() != "signin_link_invalid" || r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("second opening: %s %v", r, r.Header)
	}
	// A later sign-in grants nothing more, and says so by saying nothing.
	if r := signinRequest(h, "ada@example.com"); r.Status != 202 {
		t.Fatalf("second sign-in request: %s", r)
	}
	if r := h.Link(h.LastLink("ada@example.com")); r.Status != 200 || fmt.Sprint(r.JSON()["welcome"]) != "0" {
		t.Fatalf("second sign-in: %s %v", r, r.Header)
	}
	again := h.SignIn("ada@example.com")
	if h.Account(again) != acct || h.Balance(acct) != 100 {
		t.Fatalf("second sign-in: account %s balance %d", h.Account(again), h.Balance(acct))
	}
	if n := h.Rows("SELECT COUNT(*) FROM credit_entries WHERE account_id = ? AND kind = 'welcome'", abi.String(acct))[0][0].AsInt(); n != 1 {
		t.Fatalf("%d welcome entries", n)
	}
	h.CheckInvariant()
}

// Opening a link spends nothing: a mail scanner's GET or HEAD, or any page
// that sends a browser there, leaves it to the console's POST, which needs
// the exact Origin. A link of the earlier form (GET …/verify?token=) is
// sent on to the console with the token in the fragment.
func TestOpeningALinkSpendsNothing(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	if r := signinRequest(h, "scanned@example.com"); r.Status != 202 {
		t.Fatal(r)
	}
	link := h.LastLink("scanned@example.com")
	token := link[strings.Index(link, "#signin=")+8:]
	for _, method := range []string{"GET", "HEAD"} {
		r := h.Do(method, "/api/service/auth/verify?token="+token, "")
		if r.Status != 303 || r.Header.Get("Location") != link || r.Header.Get("Set-Cookie") != "" || r.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Fatalf("%s of a link of the earlier form: %s %v", method, r, r.Header)
		}
	}
	if r := h.Do("GET", "/api/service/auth/verify?token=dgl_nonsense", ""); r.Status != 303 || r.Header.Get("Location") != origin+"/?signin=invalid" {
		t.Fatalf("a malformed link: %s %v", r, r.Header)
	}
	// The POST needs the console's exact Origin.
	for _, o := range []string{"", "https://evil.example", "null"} {
		var extra []string
		if o != "" {
			extra = []string{"Origin", o}
		}
		r := h.Do("POST", "/api/service/auth/verify", `{"token":"`+token+`"}`, append(extra, "Content-Type", "application/json")...)
		if r.Status != 403 || r.Code() != "origin_not_allowed" || r.Header.Get("Set-Cookie") != "" {
			t.Errorf("verify with Origin %q: %s", o, r)
		}
	}
	for _, body := range []string{`{}`, `{"token":3}`, `not json`} {
		if r := h.Do("POST", "/api/service/auth/verify", body, "Origin", origin); r.Status != 400 || r.Code() != "invalid_request" {
			t.Errorf("verify %s: %s", body, r)
		}
	}
	if n := h.Rows("SELECT COUNT(*) FROM accounts")[0][0].AsInt(); n != 0 {
		t.Fatalf("%d accounts created before the console spent the link", n)
	}
	// The link still works, once.
	if r := h.Link(link); r.Status != 200 || r.Header.Get("Set-Cookie") == "" {
		t.Fatalf("the console's POST after all that: %s", r)
	}
}

// The nonce a console sends with its request comes back in the link, so
// that console can tell its own link from one it was sent to; a malformed
// one is left out.
func TestLinkCarriesTheConsolesNonce(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	for nonce, want := range map[string]string{
		"0123456789abcdef0123456789abcdef": "&n=0123456789abcdef0123456789abcdef",
		"short":                            "",
		"0123456789ABCDEF0123456789ABCDEF": "",
		"":                                 "",
	} {
		body := `{"email":"nonce@example.com","nonce":"` + nonce + `"}`
		if r := h.Do("POST", "/api/service/auth/signin", body, "Origin", origin, "Content-Type", "application/json"); r.Status != 202 {
			t.Fatalf("sign-in with nonce %q: %s", nonce, r)
		}
		link := h.LastLink("nonce@example.com")
		_, rest, _ := strings.Cut(link, "#signin=")
		_, got, _ := strings.Cut(rest, "&")
		if got != "" {
			got = "&" + got
		}
		if got != want {
			t.Errorf("nonce %q: the link ends %q, want %q (%s)", nonce, got, want, link)
		}
		if r := h.Link(link); r.Status != 200 {
			t.Errorf("the link with nonce %q: %s", nonce, r)
		}
	}
}

func TestExpiredOrForgedLinkSignsNobodyIn(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	expired := keys.New(keys.SignIn, keys.NewAccountID())
	past := time.Now().Unix() - 3600
	h.Rows("INSERT INTO signin_tokens (token_hash, email, created_at, expires_at) VALUES (?, 'late@example.com', ?, ?)",
		abi.String(keys.Hash(expired)), abi.Int64(past), abi.Int64(past+900))
	for _, token := range []string{expired, keys.New(keys.SignIn, keys.NewAccountID()), "dgl_nonsense", "", keys.New(keys.Session, keys.NewAccountID())} {
		r := h.Link(origin + "/#signin=" + token)
		if r.Status != 400 || r.Code() != "signin_link_invalid" || r.Header.Get("Set-Cookie") != "" {
			t.Errorf("token %q: %s %v", token, r, r.Header)
		}
	}
	if n := h.Rows("SELECT COUNT(*) FROM accounts")[0][0].AsInt(); n != 0 {
		t.Fatalf("%d accounts created", n)
	}
}

// Sign-in answers do not tell whether an address has an account.
func TestSignInDoesNotRevealAccounts(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	h.SignIn("known@example.com")
	a, b := signinRequest(h, "known@example.com"), signinRequest(h, "unknown@example.com")
	if a.Status != b.Status || string(a.Body) != string(b.Body) {
		t.Fatalf("known %s, unknown %s", a, b)
	}
	if n := h.Rows("SELECT COUNT(*) FROM accounts WHERE email = 'unknown@example.com'")[0][0].AsInt(); n != 0 {
		t.Fatal("an account was created before its link was opened")
	}
}

// The limits count in fixed 15-minute windows (accounts.SignInWindow): the
// test starts with room for its 31 requests in the current one.
func TestSignInRateLimitedPerAddressAndPerClient(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	testenv.RoomInWindow(t, accounts.SignInWindow*time.Second, 20*time.Second)
	for i := 0; i < 5; i++ {
		if r := signinRequest(h, "flood@example.com"); r.Status != 202 {
			t.Fatalf("request %d: %s", i+1, r)
		}
	}
	r := signinRequest(h, "flood@example.com")
	if r.Status != 429 || r.Code() != "signin_rate_limited" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("6th request for one address: %s", r)
	}
	if n := len(h.Mails()); n != 5 {
		t.Fatalf("%d mails sent", n)
	}
	// The same client (127.0.0.1) has made 6 attempts; 24 more addresses
	// reach its limit of 30.
	for i := 0; i < 24; i++ {
		if r := signinRequest(h, "walker"+string(rune('a'+i))+"@example.com"); r.Status != 202 {
			t.Fatalf("address %d: %s", i, r)
		}
	}
	if r := signinRequest(h, "fresh@example.com"); r.Status != 429 || r.Code() != "signin_rate_limited" {
		t.Fatalf("31st request of one client: %s", r)
	}
	// Counters are stored under hashed identities only.
	for _, row := range h.Rows("SELECT scope FROM rate_windows") {
		if s := row[0].AsString(); strings.Contains(s, "127.0.0.1") || strings.Contains(s, "@") {
			t.Errorf("scope %q holds a clear identity", s)
		}
	}
}

func TestSignInAndSignOutNeedTheExactOrigin(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	for _, o := range []string{"", "https://console.example.evil", "https://console.example/", "http://console.example", "https://evil.example", "null"} {
		var extra []string
		if o != "" {
			extra = []string{"Origin", o}
		}
		r := h.Do("POST", "/api/service/auth/signin", `{"email":"o@example.com"}`, append(extra, "Content-Type", "application/json")...)
		if r.Status != 403 || r.Code() != "origin_not_allowed" {
			t.Errorf("sign-in with Origin %q: %s", o, r)
		}
		if r := h.Do("POST", "/api/service/auth/signout", "", extra...); r.Status != 403 || r.Code() != "origin_not_allowed" {
			t.Errorf("sign-out with Origin %q: %s", o, r)
		}
	}
	if len(h.Mails()) != 0 {
		t.Fatal("mail sent for a refused request")
	}
}

func TestSignOutEndsTheSessionServerSide(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	cookie := h.SignIn("leaving@example.com")
	if r := h.Do("GET", "/api/service/keys", "", "Cookie", cookie); r.Status != 200 {
		t.Fatalf("keys before sign-out: %s", r)
	}
	r := h.Do("POST", "/api/service/auth/signout", "", "Cookie", cookie, "Origin", origin)
	if r.Status != 200 || !strings.Contains(r.Header.Get("Set-Cookie"), "dg_session=; Path=/; Max-Age=0") {
		t.Fatalf("sign-out: %s %v", r, r.Header)
	}
	// A copy of the cookie kept elsewhere no longer works.
	if r := h.Do("GET", "/api/service/keys", "", "Cookie", cookie); r.Status != 401 || r.Code() != "session_required" {
		t.Fatalf("keys after sign-out: %s", r)
	}
	if s := h.Do("GET", "/api/service/auth/session", "", "Cookie", cookie).JSON(); s["signedIn"] != false {
		t.Fatalf("session after sign-out: %v", s)
	}
}

func TestCookieIsNotSecureOnAnHTTPOrigin(t *testing.T) {
	h := consoletest.Start(t, "", map[string]string{"SERVICE_ORIGIN": "http://127.0.0.1:8787"})
	if r := h.Do("POST", "/api/service/auth/signin", `{"email":"dev@example.com"}`, "Origin", "http://127.0.0.1:8787"); r.Status != 202 {
		t.Fatal(r)
	}
	r := h.Link(h.LastLink("dev@example.com"))
	if set := r.Header.Get("Set-Cookie"); strings.Contains(set, "Secure") || !strings.Contains(set, "HttpOnly") {
		t.Fatalf("Set-Cookie %q", set)
	}
}

func TestMailFailuresAreReported(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	h.SetMailStatus(500)
	if r := signinRequest(h, "a@example.com"); r.Status != 502 || r.Code() != "mail_failed" {
		t.Fatalf("mail service failing: %s", r)
	}
	none := consoletest.Start(t, "", map[string]string{"MAIL_URL": ""})
	if r := signinRequest(none, "a@example.com"); r.Status != 503 || r.Code() != "mail_not_configured" {
		t.Fatalf("no mail service: %s", r)
	}
	for _, body := range []string{`{"email":"not an address"}`, `{"email":""}`} {
		if r := h.Do("POST", "/api/service/auth/signin", body, "Origin", origin); r.Status != 400 || r.Code() != "invalid_email" {
			t.Errorf("%s: %s", body, r)
		}
	}
	for _, body := range []string{`[]`, `{"email":3}`, `not json`, ``} {
		if r := h.Do("POST", "/api/service/auth/signin", body, "Origin", origin); r.Status != 400 || r.Code() != "invalid_request" {
			t.Errorf("%s: %s", body, r)
		}
	}
}

func TestSessionEndpointRefusesBearer(t *testing.T) {
	h := consoletest.Start(t, "", nil)
	if r := h.Do("GET", "/api/service/auth/session", "", "Authorization", "Bearer "+keys.New(keys.APIKey, keys.NewAccountID())); r.Status != 401 || r.Code() != "bearer_not_accepted" {
		t.Fatalf("%s", r)
	}
	if s := h.Do("GET", "/api/service/auth/session", "").JSON(); s["signedIn"] != false {
		t.Fatalf("%v", s)
	}
}
