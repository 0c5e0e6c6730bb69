//go:build linux

package wranglercompat_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"decisiongateway/testkit/sqldtest"
	"decisiongateway/testkit/testenv"
)

// badSetting breaks one rule of shared/contract on purpose: a limit of 0
// would refuse every caller, so it is refused rather than read as a default.
const badSetting, badValue = "SERVICE_AUTH_RATE_LIMIT", "0"

// A bad setting is refused at start on both hosts, by name: the wazero host
// exits before it listens, `workers dev` before workerd starts, and a
// function Worker that gets one all the same (a deployed env is not
// checked by our tools) answers 503 misconfigured naming it, on its first
// request and every one after, instead of serving with a value the other
// host refuses.
func TestBadSettingIsRefusedAtStartOnBothHosts(t *testing.T) {
	ledger := sqldtest.Start(t)

	serve := exec.Command(testenv.Binary(t), "serve")
	serve.Dir = testenv.Root(t)
	serve.Env = append(cleanEnv(), "SERVICE_ADDR="+testenv.FreeAddr(t), "GATEWAY_DATA_DIR="+t.TempDir(), "LIBSQL_URL="+ledger, badSetting+"="+badValue)
	out, err := serve.CombinedOutput()
	if err == nil || !strings.Contains(string(out), badSetting+`="`+badValue+`": want a whole number from 1 to 2147483647`) {
		t.Errorf("wazero: bin/gateway serve with %s=%s: %v\n%s", badSetting, badValue, err, out)
	}

	envFile := filepath.Join(t.TempDir(), "dev.env")
	writeFile(t, envFile, "LIBSQL_URL="+ledger+"\n"+badSetting+"="+badValue+"\n")
	tool, err := workersTool()
	if err != nil {
		t.Fatal(err)
	}
	dev := exec.Command(tool, "dev", "-out", generateWorkers(t, true), "-env-file", envFile)
	dev.Dir = testenv.Root(t)
	dev.Env = wranglerEnv(t, nodeBin(t))
	out, err = dev.CombinedOutput()
	if err == nil || !strings.Contains(string(out), badSetting+`="`+badValue+`"`) {
		t.Errorf("workers dev with %s=%s: %v\n%s", badSetting, badValue, err, out)
	}

	w := startWrangler(t, map[string]string{"LIBSQL_URL": ledger, badSetting: badValue})
	for range 2 {
		a := do(t, "GET", w.url+"/api/service/config")
		checkPlatformError(t, w.name, a, 503, "misconfigured")
		var body struct{ Error struct{ Message string } }
		json.Unmarshal(a.body, &body)
		if !strings.Contains(body.Error.Message, badSetting+`="`+badValue+`"`) {
			t.Errorf("workerd: the message does not name the setting: %s", a.body)
		}
	}
}
