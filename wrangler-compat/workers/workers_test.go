package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/wasm-host/routes"
)

// TestGenerateFollowsTheRouteTable generates Workers from a small route
// table: one Worker per built function with exactly its routes, a front
// Worker bound to each, and a routed function without a module left out
// (its routes answer 503 at the front, as on the wazero host).
func TestGenerateFollowsTheRouteTable(t *testing.T) {
	fns := t.TempDir()
	os.WriteFile(filepath.Join(fns, "alpha.wasm"), []byte("alpha module"), 0o644)
	os.WriteFile(filepath.Join(fns, "beta.wasm"), []byte("beta module"), 0o644)
	table := []routes.Route{
		{Method: "GET", Pattern: "/a", Function: "alpha"},
		{Method: "POST", Pattern: "/a/:id", Function: "alpha", MaxBody: 10},
		{Method: "GET", Pattern: "/b", Function: "beta"},
		{Method: "GET", Pattern: "/g", Function: "gamma"},
	}
	out := filepath.Join(t.TempDir(), "gen")
	m, err := generate(genOptions{Routes: table, Functions: fns, Out: out, Prefix: "dg", Vars: map[string]string{"SERVICE_RATE_LIMIT": "7"}, Src: "/repo/wrangler-compat/src"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Functions) != 2 || m.Functions[0].Name != "dg-alpha" || len(m.Functions[0].Routes) != 2 || m.Functions[1].Binding != "FN_BETA" {
		t.Fatalf("functions %+v", m.Functions)
	}
	if len(m.Missing) != 1 || m.Missing[0] != "gamma" {
		t.Errorf("missing %v, want [gamma]", m.Missing)
	}
	toml := read(t, filepath.Join(out, "alpha", "wrangler.toml"))
	for _, want := range []string{`name = "dg-alpha"`, "workers_dev = false", "[ai]\nbinding = \"AI\"", `SERVICE_RATE_LIMIT = "7"`, `type = "CompiledWasm"`} {
		if !strings.Contains(toml, want) {
			t.Errorf("alpha's wrangler.toml lacks %q:\n%s", want, toml)
		}
	}
	if js := read(t, filepath.Join(out, "alpha", "worker.js")); !strings.Contains(js, `"version": "`+m.Functions[0].Version+`"`) || !strings.Contains(js, "/repo/wrangler-compat/src/function.js") {
		t.Errorf("alpha's worker.js:\n%s", js)
	}
	front := read(t, filepath.Join(out, "front", "wrangler.toml"))
	if !strings.Contains(front, "binding = \"FN_ALPHA\"\nservice = \"dg-alpha\"") || strings.Contains(front, "gamma") {
		t.Errorf("front wrangler.toml:\n%s", front)
	}
	if js := read(t, filepath.Join(out, "front", "worker.js")); !strings.Contains(js, `"pattern": "/g"`) || !strings.Contains(js, `"name": "0001_`) {
		t.Errorf("the front's table lacks the unbuilt function's route or the migrations /readyz checks:\n%s", js)
	}
	if !strings.Contains(front, "[vars]\nSERVICE_RATE_LIMIT = \"7\"") {
		t.Errorf("the front lacks the plain settings /readyz reads:\n%s", front)
	}

	// Regenerating after beta left the route table removes its Worker.
	if _, err := generate(genOptions{Routes: table[:2], Functions: fns, Out: out, Prefix: "dg", Src: "/repo/wrangler-compat/src", Local: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "beta")); !os.IsNotExist(err) {
		t.Errorf("beta's Worker survived its removal from the route table (%v)", err)
	}
	if toml := read(t, filepath.Join(out, "alpha", "wrangler.toml")); !strings.Contains(toml, `entrypoint = "LocalAI"`) || strings.Contains(toml, "[ai]") {
		t.Errorf("local alpha is not bound to the AI stand-in:\n%s", toml)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVarsRefuseSecrets checks the -vars file: plain settings modules read
// go to [vars]; a secret, or a name no module reads, is refused.
func TestVarsRefuseSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "vars")
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	vars, err := readVars(write("# settings\nSERVICE_RATE_LIMIT=77\nUPSTREAM_KIND = edge\n"))
	if err != nil || vars["SERVICE_RATE_LIMIT"] != "77" || vars["UPSTREAM_KIND"] != "edge" {
		t.Fatalf("vars %v, %v", vars, err)
	}
	for _, bad := range []string{"LIBSQL_URL=http://x", "UPSTREAM_API_KEY=sk", "MY_TOKEN=t", "NOT_A_SETTING=1", "SERVICE_RATE_LIMIT"} {
		if _, err := readVars(write(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSplitFindsTheCanaryByAge checks how a release tells a deployment's
// versions apart: the canary is the newer one, whatever the shares.
func TestSplitFindsTheCanaryByAge(t *testing.T) {
	var d deployment
	json.Unmarshal([]byte(`{"id":"d1","versions":[{"version_id":"old","percentage":50},{"version_id":"new","percentage":50}]}`), &d)
	var vs []versionInfo
	json.Unmarshal([]byte(`[{"id":"new","metadata":{"created_on":"2026-11-20T10:00:00.000000Z"}},{"id":"old","metadata":{"created_on":"2026-11-01T09:00:00.000000Z"}}]`), &vs)
	stable, canary, err := split(d, vs)
	if err != nil || stable != "old" || canary != "new" {
		t.Errorf("split = %q, %q, %v; want old, new", stable, canary, err)
	}
	one := deployment{Versions: []traffic{{VersionID: "only", Percentage: 100}}}
	if stable, canary, err := split(one, nil); err != nil || stable != "only" || canary != "" {
		t.Errorf("one version: %q, %q, %v", stable, canary, err)
	}
	if _, _, err := split(d, vs[:1]); err == nil {
		t.Error("a version missing from the list was accepted")
	}
	got := command(splitArgs("gen/decide/wrangler.toml", "new", "old", 12.5, "canary decide@0123"))
	want := "wrangler versions deploy new@12.5% old@87.5% --yes --message 'canary decide@0123' -c gen/decide/wrangler.toml"
	if got != want {
		t.Errorf("deploy command\n%s\nwant\n%s", got, want)
	}
	for _, bad := range []string{"-1", "101", "x"} {
		if _, err := percent(bad); err == nil {
			t.Errorf("percent %q accepted", bad)
		}
	}
}

// TestPreviousStableUndoesThePromotion checks the version a rollback with
// no canary returns to: the last one that served everyone before the
// current version, skipping the splits and the current version's own
// earlier deployments.
func TestPreviousStableUndoesThePromotion(t *testing.T) {
	var ds []deployment
	json.Unmarshal([]byte(`[
	 {"created_on":"2026-11-01T09:00:00Z","versions":[{"version_id":"v1","percentage":100}]},
	 {"created_on":"2026-11-02T09:00:00Z","versions":[{"version_id":"v2","percentage":10},{"version_id":"v1","percentage":90}]},
	 {"created_on":"2026-11-03T09:00:00Z","versions":[{"version_id":"v2","percentage":100}]},
	 {"created_on":"2026-11-04T09:00:00Z","versions":[{"version_id":"v3","percentage":25},{"version_id":"v2","percentage":75}]},
	 {"created_on":"2026-11-05T09:00:00Z","versions":[{"version_id":"v2","percentage":100}]}]`), &ds)
	if got, err := previousStable(ds, "v2"); err != nil || got != "v1" {
		t.Errorf("previousStable = %q, %v; want v1", got, err)
	}
	if _, err := previousStable(ds[:1], "v1"); err == nil {
		t.Error("a first deployment has nothing to roll back to")
	}
}

// TestFrontGetsTheLedgerSecretsOnly checks what deploy gives the front
// Worker from a secrets file (JSON or NAME=VALUE): the ledger's URL and
// token for /readyz, never the upstream or mail key.
func TestFrontGetsTheLedgerSecretsOnly(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"secrets.json": `{"LIBSQL_URL":"libsql://db.example","LIBSQL_AUTH_TOKEN":"tok","UPSTREAM_API_KEY":"sk-up","MAIL_API_KEY":"mk"}`,
		"secrets.env":  "LIBSQL_URL=libsql://db.example\nLIBSQL_AUTH_TOKEN=\"tok\"\nUPSTREAM_API_KEY=sk-up\n",
	} {
		in := filepath.Join(dir, name)
		os.WriteFile(in, []byte(content), 0o600)
		out, err := filterSecrets(in, FrontSecrets, filepath.Join(dir, name+".front"))
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(read(t, out)), &got); err != nil || len(got) != 2 || got["LIBSQL_URL"] != "libsql://db.example" || got["LIBSQL_AUTH_TOKEN"] != "tok" {
			t.Errorf("%s: front secrets %v (%v)", name, got, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "none.json"), []byte(`{"UPSTREAM_API_KEY":"sk-up"}`), 0o600)
	if out, err := filterSecrets(filepath.Join(dir, "none.json"), FrontSecrets, filepath.Join(dir, "none.front")); err != nil || out != "" {
		t.Errorf("no ledger secret: %q %v", out, err)
	}
}

// The Workers shim's copy of the contract is generated from the Go tables;
// a change to them without `make contract-js` fails here, so the two hosts
// never run on different tables.
func TestContractJSIsCurrent(t *testing.T) {
	have, err := os.ReadFile(filepath.Join("..", "..", ContractJS))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, contractJS()) {
		t.Fatalf("%s is stale: run `make contract-js` (go run ./wrangler-compat/workers contract-js)", ContractJS)
	}
}
