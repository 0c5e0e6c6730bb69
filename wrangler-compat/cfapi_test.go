//go:build linux

package wranglercompat_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"decisiongateway/testkit/testenv"
)

// cloudflare is a stand-in for the part of the Cloudflare API that
// `wrangler versions upload`, `versions list`, `versions deploy`,
// `deployments status` and `rollback` use, for one account. It is outside
// this project, so faking it is what lets the rollout commands run for real
// offline, with wrangler pointed at it by CLOUDFLARE_API_BASE_URL. It keeps
// versions and deployments per Worker and records what was uploaded.
type cloudflare struct {
	t   testing.TB
	mu  sync.Mutex
	srv *httptest.Server

	versions    map[string][]*cfVersion    // by Worker, oldest first
	deployments map[string][]*cfDeployment // by Worker, newest first
	clock       time.Time
	realClock   bool // created_on is the wall clock (analysis windows), not the fake one
	unknown     []string
}

type cfVersion struct {
	ID       string         `json:"id"`
	Number   int            `json:"number"`
	Metadata map[string]any `json:"metadata"`
	// Annotations carry workers/tag and workers/message.
	Annotations map[string]string `json:"annotations"`
	Resources   map[string]any    `json:"resources"`
	script      []byte            // every uploaded part, concatenated
}

type cfDeployment struct {
	ID          string            `json:"id"`
	Source      string            `json:"source"`
	Strategy    string            `json:"strategy"`
	AuthorEmail string            `json:"author_email"`
	CreatedOn   string            `json:"created_on"`
	Annotations map[string]string `json:"annotations"`
	Versions    []cfTraffic       `json:"versions"`
}

type cfTraffic struct {
	VersionID  string  `json:"version_id"`
	Percentage float64 `json:"percentage"`
}

const cfAccount = "0123456789abcdef0123456789abcdef"

func newCloudflare(t testing.TB) *cloudflare {
	cf := &cloudflare{t: t, versions: map[string][]*cfVersion{}, deployments: map[string][]*cfDeployment{},
		clock: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
	cf.srv = httptest.NewServer(http.HandlerFunc(cf.serve))
	t.Cleanup(cf.srv.Close)
	return cf
}

// env points wrangler at the stand-in.
func (cf *cloudflare) env() []string {
	return []string{"CLOUDFLARE_API_BASE_URL=" + cf.srv.URL + "/client/v4", "CLOUDFLARE_API_TOKEN=test-token", "CLOUDFLARE_ACCOUNT_ID=" + cfAccount}
}

func (cf *cloudflare) tick() string {
	cf.clock = cf.clock.Add(time.Minute)
	if cf.realClock {
		cf.clock = time.Now().UTC()
	}
	return cf.clock.Format("2006-01-02T15:04:05.000000Z")
}

// addVersion records a version of worker; call with cf.mu held.
func (cf *cloudflare) addVersion(worker, tag, message string, script []byte) *cfVersion {
	n := len(cf.versions[worker]) + 1
	created := cf.tick()
	v := &cfVersion{
		ID:          fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n),
		Number:      n,
		Metadata:    map[string]any{"created_on": created, "modified_on": created, "source": "wrangler", "author_email": "ops@example.test", "author_id": "a1"},
		Annotations: map[string]string{"workers/tag": tag, "workers/message": message},
		Resources:   map[string]any{"bindings": []any{}, "script": map[string]any{"etag": "e", "handlers": []string{"fetch"}}, "script_runtime": map[string]any{"usage_model": "standard"}},
		script:      script,
	}
	cf.versions[worker] = append(cf.versions[worker], v)
	return v
}

// deploy records a deployment of worker; call with cf.mu held.
func (cf *cloudflare) deploy(worker, message string, traffic []cfTraffic) *cfDeployment {
	d := &cfDeployment{ID: fmt.Sprintf("d-%d", len(cf.deployments[worker])+1), Source: "wrangler", Strategy: "percentage",
		AuthorEmail: "ops@example.test", CreatedOn: cf.tick(), Annotations: map[string]string{"workers/message": message}, Versions: traffic}
	cf.deployments[worker] = append([]*cfDeployment{d}, cf.deployments[worker]...)
	return d
}

// seed gives worker a first version, deployed to 100%, as a first
// `wrangler deploy` would.
func (cf *cloudflare) seed(worker string) string {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	v := cf.addVersion(worker, "", "first deploy", nil)
	cf.deploy(worker, "first deploy", []cfTraffic{{v.ID, 100}})
	return v.ID
}

// current returns worker's latest deployment.
func (cf *cloudflare) current(worker string) []cfTraffic {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	return cf.deployments[worker][0].Versions
}

func (cf *cloudflare) latestVersion(worker string) *cfVersion {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	vs := cf.versions[worker]
	return vs[len(vs)-1]
}

var cfPath = regexp.MustCompile(`^/client/v4/accounts/` + cfAccount + `/workers/(services|scripts)/([^/]+)(/.*)?$`)

func (cf *cloudflare) serve(w http.ResponseWriter, r *http.Request) {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	reply := func(status int, result any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		body := map[string]any{"success": status < 300, "errors": []any{}, "messages": []any{}, "result": result}
		if status >= 300 {
			body["errors"] = []any{map[string]any{"code": 10007, "message": "not found"}}
		}
		json.NewEncoder(w).Encode(body)
	}
	m := cfPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		cf.unknown = append(cf.unknown, r.Method+" "+r.URL.String())
		reply(404, nil)
		return
	}
	kind, worker, rest := m[1], m[2], m[3]
	switch {
	case kind == "services" && rest == "" && r.Method == "GET":
		if len(cf.versions[worker]) == 0 {
			reply(404, nil)
			return
		}
		reply(200, map[string]any{"id": worker, "default_environment": map[string]any{"environment": "production", "script": map[string]any{"id": worker, "tag": "tag-" + worker}}})
	case rest == "/secrets" && r.Method == "GET":
		reply(200, []any{})
	case rest == "/settings" && r.Method == "GET":
		reply(200, map[string]any{"logpush": false, "tail_consumers": []any{}})
	case rest == "/versions" && r.Method == "POST":
		tag, message, script := readUpload(cf.t, r)
		reply(200, cf.addVersion(worker, tag, message, script))
	case rest == "/versions" && r.Method == "GET":
		reply(200, map[string]any{"items": cf.versions[worker]})
	case strings.HasPrefix(rest, "/versions/") && r.Method == "GET":
		for _, v := range cf.versions[worker] {
			if v.ID == strings.TrimPrefix(rest, "/versions/") {
				reply(200, v)
				return
			}
		}
		reply(404, nil)
	case rest == "/deployments" && r.Method == "GET":
		reply(200, map[string]any{"deployments": cf.deployments[worker]})
	case rest == "/deployments" && r.Method == "POST":
		var body struct {
			Versions    []cfTraffic       `json:"versions"`
			Annotations map[string]string `json:"annotations"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		reply(200, cf.deploy(worker, body.Annotations["workers/message"], body.Versions))
	default:
		cf.unknown = append(cf.unknown, r.Method+" "+r.URL.String())
		reply(404, nil)
	}
}

// readUpload takes a version upload apart: the annotations in its metadata
// part, and every part's bytes, in which a test finds the module version.
func readUpload(t testing.TB, r *http.Request) (tag, message string, script []byte) {
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		t.Errorf("version upload: %v", err)
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var all bytes.Buffer
	for {
		part, err := mr.NextPart()
		if err != nil {
			break
		}
		data, _ := io.ReadAll(part)
		if part.FormName() == "metadata" {
			var meta struct {
				Annotations map[string]string `json:"annotations"`
			}
			json.Unmarshal(data, &meta)
			tag, message = meta.Annotations["workers/tag"], meta.Annotations["workers/message"]
		}
		all.Write(data)
	}
	return tag, message, all.Bytes()
}

// TestCanaryRolloutOnWorkersAgainstTheAPI runs the Workers rollout commands
// for real, with wrangler talking to a stand-in for the Cloudflare API: a
// canary of a new build of the config function at 10% beside the deployed
// version, its promotion, a second canary rolled back to the stable version,
// and then the rollback of the promotion itself.
func TestCanaryRolloutOnWorkersAgainstTheAPI(t *testing.T) {
	out := generateWorkers(t, false)
	cf := newCloudflare(t)
	const worker = "decision-gateway-config"
	first := cf.seed(worker)
	release := func(args ...string) string {
		t.Helper()
		return runWorkersEnv(t, cf.env(), append([]string{"release", "-out", out}, args...)...)
	}
	v2 := testenv.Wasm(t, "testguests/canaryv2.wasm")
	short := versionOf(v2)

	text := release("canary", "config", filepath.Join(testenv.Root(t), "build", "testguests", "canaryv2.wasm"), "10")
	canary := cf.latestVersion(worker)
	if canary.Annotations["workers/tag"] != short || !bytes.Contains(canary.script, []byte(`"config@`+short+`"`)) {
		t.Fatalf("uploaded version %s (tag %q) does not carry config@%s\n%s", canary.ID, canary.Annotations["workers/tag"], short, text)
	}
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 10}, {first, 90}}) {
		t.Fatalf("after canary: deployment %v, want %s@10%% %s@90%%\n%s", got, canary.ID, first, text)
	}

	// A ramp of the same build uploads nothing: the same two version ids
	// at new shares, so Cloudflare keeps every caller already on the
	// canary there.
	cf.mu.Lock()
	uploads := len(cf.versions[worker])
	cf.mu.Unlock()
	text = release("canary", "config", filepath.Join(testenv.Root(t), "build", "testguests", "canaryv2.wasm"), "30")
	cf.mu.Lock()
	again := len(cf.versions[worker])
	cf.mu.Unlock()
	if again != uploads || cf.latestVersion(worker).ID != canary.ID {
		t.Fatalf("the ramp uploaded a new version (%d versions, was %d)\n%s", again, uploads, text)
	}
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 30}, {first, 70}}) {
		t.Fatalf("after the ramp: deployment %v, want %s@30%% %s@70%%\n%s", got, canary.ID, first, text)
	}

	release("promote", "config")
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 100}}) {
		t.Fatalf("after promote: deployment %v, want %s@100%%", got, canary.ID)
	}

	release("canary", "config", filepath.Join(testenv.Root(t), "build", "testguests", "canaryv1.wasm"), "25")
	third := cf.latestVersion(worker)
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{third.ID, 25}, {canary.ID, 75}}) {
		t.Fatalf("second canary: deployment %v", got)
	}
	release("rollback", "config")
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{canary.ID, 100}}) {
		t.Fatalf("after rolling the canary back: deployment %v, want %s@100%%", got, canary.ID)
	}
	// With no canary left, a rollback undoes the promotion: the version
	// that served everyone before it comes back.
	release("rollback", "config")
	if got := cf.current(worker); !sameTraffic(got, []cfTraffic{{first, 100}}) {
		t.Fatalf("after rolling the promotion back: deployment %v, want %s@100%%", got, first)
	}
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if len(cf.unknown) > 0 {
		t.Errorf("API calls the stand-in does not implement (answered 404): %v", cf.unknown)
	}
}

func sameTraffic(got, want []cfTraffic) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || (g.VersionID == w.VersionID && g.Percentage == w.Percentage)
		}
		if !found {
			return false
		}
	}
	return true
}

func versionOf(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:])[:12]
}
