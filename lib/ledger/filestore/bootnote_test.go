//go:build linux

package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tether-sh/tether/lib/ledger"
)

func TestBootNoteName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"scope", true},
		{"systemd-run-2", true},
		{"", false},
		{"Scope", false},
		{"../lock", false},
		{"a/b", false},
		{".tmp", false},
		{"abcdefghijklmnopqrstuvwxyz0123456", false}, // 33
	}
	for _, tt := range tests {
		if err := ledger.ValidNoteName(tt.name); (err == nil) != tt.ok {
			t.Errorf("ValidNoteName(%q) = %v; want ok %v", tt.name, err, tt.ok)
		} else if err != nil && !errors.Is(err, ledger.ErrBadInput) {
			t.Errorf("ValidNoteName(%q) = %v; want ErrBadInput", tt.name, err)
		}
	}
}

func TestBootNote(t *testing.T) {
	boot := ledger.BootID()
	if boot == "" {
		t.Skip("no boot id here")
	}
	s := newStore(t)
	if v, ok, err := s.BootNote("scope"); v != "" || ok || err != nil {
		t.Fatalf("BootNote(scope) on a new store = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	if err := s.SetBootNote("scope", "no: no bus"); err != nil {
		t.Fatalf("SetBootNote(scope) = %v; want nil", err)
	}
	if v, ok, err := s.BootNote("scope"); v != "no: no bus" || !ok || err != nil {
		t.Fatalf("BootNote(scope) = %q, %v, %v; want \"no: no bus\", true, nil", v, ok, err)
	}
	p := filepath.Join(s.Location(), "boot.scope")
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("stat %s = %v, %v; want mode 0600", p, fi, err)
	}
	if ents, _ := filepath.Glob(filepath.Join(s.Location(), ".tmp.*")); len(ents) != 0 {
		t.Errorf("temporary files left: %q", ents)
	}

	// What another boot noted, or a damaged note, is no note.
	for _, content := range []string{
		"00000000-0000-0000-0000-000000000000\nyes",
		boot, // no value line
		"",
	} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := s.BootNote("scope"); v != "" || ok || err != nil {
			t.Errorf("BootNote(scope) with %q = %q, %v, %v; want \"\", false, nil", content, v, ok, err)
		}
	}
	if err := s.SetBootNote("scope", "yes"); err != nil {
		t.Fatalf("SetBootNote(scope) over another boot's note = %v; want nil", err)
	}
	if v, ok, err := s.BootNote("scope"); v != "yes" || !ok || err != nil {
		t.Errorf("BootNote(scope) = %q, %v, %v; want \"yes\", true, nil", v, ok, err)
	}
	if _, _, err := s.BootNote("../lock"); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("BootNote(../lock) = %v; want ErrBadInput", err)
	}
}
