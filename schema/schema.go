// Package schema carries the ledger's SQL migrations inside the binary, so a
// host can bring any libSQL database up to date with nothing but its URL.
//
// A migration is a file migrations/NNNN_name.sql: NNNN is its version (at
// least four digits, unique, applied in increasing order), name says what it
// does. Adding a file is all it takes to ship a migration; an applied file must
// never be edited, because hosts that already ran it will not run it again.
package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
)

//go:embed migrations/*.sql
var files embed.FS

// Migration is one schema change, applied once per database.
type Migration struct {
	Version int    // from the file name's NNNN prefix
	Name    string // the file name without directory, e.g. "0001_init.sql"
	SQL     string // the file's contents: one or more statements
}

var migrationName = regexp.MustCompile(`^([0-9]{4,})_[a-z0-9_]+\.sql$`)

// Migrations returns every embedded migration in version order. It fails on a
// misnamed file or on two files with the same version, so such a mistake stops
// the build's tests rather than a production start.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(files, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	seen := map[int]string{}
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("schema: migration %q is not named NNNN_lower_snake.sql", e.Name())
		}
		v, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("schema: migration %q: %w", e.Name(), err)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("schema: migrations %q and %q share version %d", prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(files, "migrations/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}
