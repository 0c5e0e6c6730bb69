// Command workers deploys the gateway's functions to Cloudflare Workers, each
// function as its own Worker behind a front Worker, and rolls a function's
// new module out gradually. Everything it writes is generated from the
// wazero host's route table (`gateway routes`), so the two hosts never keep
// their own copies of it.
//
//	workers generate -routes FILE [-functions DIR] [-out DIR] [-local] [-vars FILE]
//	workers dev      [-out DIR] -env-file FILE [-port N]  run every Worker locally in one wrangler dev
//	workers deploy   [-out DIR] [-secrets FILE] [-dry-run]  (-dry-run: bundle, check, print sizes against the limits)
//	workers release  canary FUNCTION PATH.wasm PERCENT | watch FUNCTION STEPS | promote FUNCTION | rollback FUNCTION | status FUNCTION
//
// Run it from the repository root: go run ./wrangler-compat/workers …
// It runs the pinned wrangler of wrangler-compat/node_modules with the Node
// 22 there (scripts/install-node-tools.sh installs both).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

const usage = `usage (from the repository root):
  go run ./wrangler-compat/workers generate -routes FILE [-functions DIR] [-out DIR] [-name NAME] [-local] [-vars FILE]
  go run ./wrangler-compat/workers dev      [-out DIR] -env-file FILE [-port 8788]
  go run ./wrangler-compat/workers deploy   [-out DIR] [-secrets FILE] [-dry-run]
  go run ./wrangler-compat/workers release  [-out DIR] [-dry-run] [-force] canary FUNCTION PATH.wasm PERCENT
  go run ./wrangler-compat/workers release  [-out DIR] [-dry-run] promote|rollback|status FUNCTION
  go run ./wrangler-compat/workers release  [-ledger URL] [-min-samples N] [-max-error-rate R]
                                            [-max-latency-ratio X] [-every 30s] [-once] watch FUNCTION STEPS

Flags may come before or after the arguments. watch judges the canary on
the counts the function Workers write to the ledger (LIBSQL_URL), with the
wazero hosts' analysis, and steps through STEPS (1,10,50), promotes after
the last, or rolls back (a rolled-back version is refused unless -force).
  go run ./wrangler-compat/workers contract-js [-out FILE]   # regenerate src/contract.gen.js

FILE for -routes is what 'bin/gateway routes' prints ('-' reads standard input).
-out defaults to wrangler-compat/generated.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "generate":
		err = cmdGenerate(os.Args[2:], os.Stdout)
	case "dev":
		err = cmdDev(os.Args[2:], os.Stdout)
	case "deploy":
		err = cmdDeploy(os.Args[2:], os.Stdout)
	case "release":
		err = cmdRelease(os.Args[2:], os.Stdout)
	case "contract-js":
		err = cmdContractJS(os.Args[2:])
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "workers:", err)
		os.Exit(1)
	}
}

// readManifest loads the workers.json a generation left in out.
func readManifest(out string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(out, "workers.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no generated Workers: run `workers generate` first", out)
	} else if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s/workers.json: %w", out, err)
	}
	return &m, nil
}

// function returns the manifest entry of a function Worker.
func (m *Manifest) function(name string) (*FunctionEntry, error) {
	for i := range m.Functions {
		if m.Functions[i].Function == name {
			return &m.Functions[i], nil
		}
	}
	return nil, fmt.Errorf("no Worker was generated for a function named %q", name)
}

// repoRoot finds the directory holding go.mod, from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory: run from the repository")
		}
		dir = parent
	}
}
