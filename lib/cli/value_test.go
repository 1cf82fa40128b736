package cli

import (
	"testing"
	"time"
)

func TestNegativeValues(t *testing.T) {
	type g struct {
		Grace  Duration         `default:"5s"`
		Opt    OptionalDuration `name:"opt"`
		Older  Retention        `name:"older"`
		Keep   Count            `name:"keep"`
		Force  bool             `short:"f"`
		Target int              `arg:"" optional:""`
	}
	tests := []struct {
		args   []string
		stderr string // "" when the parse succeeds
		check  func(g) bool
	}{
		{[]string{"--grace", "-5s"}, "t: --grace: invalid duration \"-5s\": must not be negative\n", nil},
		{[]string{"--grace=-5s"}, "t: --grace: invalid duration \"-5s\": must not be negative\n", nil},
		{[]string{"--grace", "-.5"}, "t: --grace: invalid duration \"-.5\": must not be negative\n", nil},
		{[]string{"--opt", "-1"}, "t: --opt: invalid duration \"-1\": must not be negative\n", nil},
		{[]string{"--older", "-7d"}, "t: --older: invalid duration \"-7d\": must not be negative\n", nil},
		{[]string{"--keep", "-1"}, "t: --keep: invalid count \"-1\": must not be negative\n", nil},
		{[]string{"--keep", "x"}, "t: --keep: invalid count \"x\"\n", nil},
		// a flag after a flag that wants a value is still not taken as its value
		{[]string{"--grace", "-f"}, "t: --grace: expected a duration value but got \"-f\" (short flag); perhaps try --grace=\"-f\"?\n", nil},
		{[]string{"--grace", "--keep", "1"}, "t: --grace: expected a duration value but got \"--keep\" (long flag); perhaps try --grace=\"--keep\"?\n", nil},
		{[]string{"--grace", "2", "--opt", "0", "--older", "7d", "--keep", "3", "-f", "4"}, "", func(v g) bool {
			return v.Grace.D() == 2*time.Second && v.Opt.Given && v.Older.D() == 7*24*time.Hour && v.Keep == 3 && v.Force && v.Target == 4
		}},
		{[]string{}, "", func(v g) bool { return v.Grace.D() == 5*time.Second && !v.Opt.Given && v.Keep == 0 }},
	}
	for _, tt := range tests {
		var out, errOut stringsBuilder
		tool := &Tool{Name: "t", Stdout: &out, Stderr: &errOut}
		var v g
		_, code, _ := tool.Parse(&v, tt.args)
		if got := errOut.String(); got != tt.stderr {
			t.Errorf("Parse(%q) stderr = %q; want %q", tt.args, got, tt.stderr)
		}
		if tt.check != nil && (code != 0 || !tt.check(v)) {
			t.Errorf("Parse(%q) = %d, %+v; want 0 and the values given", tt.args, code, v)
		}
	}
}
