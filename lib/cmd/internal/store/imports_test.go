package store_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoStoreImports: nothing under lib/cmd imports a store
// implementation (lib/ledger/filestore, lib/ledger/pgstore): every tool
// opens its store through this package and lib/ledger/location, where the
// store policy lives. The one exception is tether-pg's blank import of
// pgstore, which registers the PostgreSQL driver with location.
func TestNoStoreImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "github.com/tether-sh/tether/lib/cmd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	impls := []string{"github.com/tether-sh/tether/lib/ledger/filestore", "github.com/tether-sh/tether/lib/ledger/pgstore"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			for _, impl := range impls {
				if imp != impl && !strings.HasPrefix(imp, impl+"/") {
					continue
				}
				if f[0] == "github.com/tether-sh/tether/lib/cmd/tetherpg" && imp == "github.com/tether-sh/tether/lib/ledger/pgstore" {
					continue // registers the driver
				}
				t.Errorf("%s imports %s; want every store opened through lib/cmd/internal/store and lib/ledger/location", f[0], imp)
			}
		}
	}
}

// TestNoStoreKindSwitch: no code under lib/cmd asks which kind of store a
// location names: location decides (ServedBy, CheckLeaseAt, Handoff,
// Names, Options), so that the policy is in one place.
func TestNoStoreKindSwitch(t *testing.T) {
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || d.Name() == "imports_test.go" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, w := range []string{"location." + "IsPostgres(", "location." + "PostgresLinked(", "location." + "IsURL("} {
			if strings.Contains(string(b), w) {
				t.Errorf("%s calls %s...): a store-kind switch outside lib/ledger/location", path, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
