package lib

import "testing"

func TestScriptStore(t *testing.T) {
	const private = "/tmp/w/.tether/ledger"
	tests := []struct {
		name string
		env  map[string]string
		want string // TETHER_LEDGER afterwards
	}{
		{"testscript default", map[string]string{"WORK": "/tmp/w", "HOME": "/no-home"}, private},
		{"no HOME", map[string]string{"WORK": "/tmp/w"}, private},
		{"outside testscript", map[string]string{"HOME": "/home/me"}, ""},
		{"relative WORK", map[string]string{"WORK": "w", "HOME": "/no-home"}, ""},
		{"TETHER_LEDGER named", map[string]string{"WORK": "/tmp/w", "HOME": "/no-home", "TETHER_LEDGER": "/tmp/w/s"}, "/tmp/w/s"},
		{"XDG_STATE_HOME named", map[string]string{"WORK": "/tmp/w", "HOME": "/no-home", "XDG_STATE_HOME": "/tmp/w/state"}, ""},
		{"relative XDG_STATE_HOME is ignored, as the ledger does", map[string]string{"WORK": "/tmp/w", "HOME": "/no-home", "XDG_STATE_HOME": "state"}, private},
		{"HOME inside WORK", map[string]string{"WORK": "/tmp/w", "HOME": "/tmp/w/home"}, ""},
		{"HOME is WORK", map[string]string{"WORK": "/tmp/w", "HOME": "/tmp/w"}, ""},
		{"HOME beside WORK", map[string]string{"WORK": "/tmp/w", "HOME": "/tmp/w2"}, private},
	}
	for _, tt := range tests {
		env := map[string]string{}
		for k, v := range tt.env {
			env[k] = v
		}
		scriptStore(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
		if got := env["TETHER_LEDGER"]; got != tt.want {
			t.Errorf("%s: scriptStore(%v): TETHER_LEDGER = %q; want %q", tt.name, tt.env, got, tt.want)
		}
	}
}
