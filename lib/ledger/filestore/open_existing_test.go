package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

func TestOpenExisting(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	s, err := Open(filepath.Join(base, "store"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.Mkdir(filepath.Join(base, "empty"), 0o700)
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	tests := []struct {
		dir     string
		noStore bool
	}{
		{"store", false},
		{"missing", true},
		{"missing/deeper", true},
		{"empty", true},
		{"file", true},
		{"store/lock", true},
	}
	for _, tt := range tests {
		dir := filepath.Join(base, tt.dir)
		s, err := OpenExisting(dir)
		if got := errors.Is(err, ledger.ErrNoStore); got != tt.noStore || (!tt.noStore && err != nil) {
			t.Errorf("OpenExisting(%s) = %v; want ErrNoStore %v", tt.dir, err, tt.noStore)
		}
		if s != nil {
			s.Close()
		}
	}
	// Nothing was created or initialised.
	for _, p := range []string{"missing", "empty/lock"} {
		if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after OpenExisting, Lstat(%s) = %v; want not exist", p, err)
		}
	}
}
