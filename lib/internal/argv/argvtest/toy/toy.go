// Package toy is a grammar that uses what the tools' grammars use and what
// the generator must leave to kong, so that lib/internal/argv is held to
// kong beyond the tools' command lines of today: environment variables,
// enums, defaults, repeated and path flags, aliases, nested commands, and
// kong's own types, hooks, validators and groups. argv_gen.go is generated
// from it (go test ./lib/internal/argv/argvtest/toy -run TestToyUpToDate -update).
package toy

import (
	"errors"
	"time"

	"github.com/alecthomas/kong"

	"github.com/tether-sh/tether/lib/cli"
	"github.com/tether-sh/tether/lib/cli/kongcli"
)

// Env is what the Run methods take.
type Env struct{ Ran []string }

type grammar struct {
	cli.VersionFlag
	Dir     cli.Location  `env:"TOY_DIR" help:"A store."`
	Verbose bool          `short:"v" help:"Say more."`
	Level   string        `default:"info" enum:"debug,info,warn" help:"How much."`
	Timeout cli.Duration  `default:"30s" env:"TOY_TIMEOUT,TOY_TIMEOUT2" help:"How long."`
	At      time.Duration `help:"kong's own mapper reads it: left to kong."`
	Hooked  hooked        `help:"A hook: left to kong."`
	Counter int           `type:"counter" help:"A named mapper: left to kong."`
	Tag     []string      `help:"Repeatable."`
	Out     string        `type:"path" help:"A path."`
	Name    string        `aliases:"label" help:"An alias."`

	Run       runCmd       `cmd:"" help:"Run."`
	Get       getCmd       `cmd:"" aliases:"show" help:"Get."`
	Group     groupCmd     `cmd:"" help:"Nested."`
	Slow      slowCmd      `cmd:"" help:"A hook: all to kong."`
	Validated validatedCmd `cmd:"" help:"A validator: all to kong."`
}

type runCmd struct {
	Job      string        `arg:"" help:"Job."`
	Every    cli.Duration  `help:"Interval."`
	Keep     cli.Count     `default:"3" help:"How many."`
	Older    cli.Retention `help:"Age."`
	ExitCode *int          `name:"exit-code" help:"Code."`
	Note     *string       `help:"Note."`
	N        int64         `short:"n" help:"Number."`
	U        uint8         `help:"Small."`
	Mode     string        `enum:"a,b" default:"a" help:"Mode."`
	Signal   cli.Signal    `default:"TERM" help:"Signal."`
	Cmd      []string      `arg:"" passthrough:"partial" name:"CMD" help:"Command."`
}

func (c *runCmd) Run(e *Env) error { e.Ran = append(e.Ran, "run"); return nil }

type getCmd struct {
	IDs []string `arg:"" optional:"" help:"Ids."`
}

func (c *getCmd) Run(e *Env) error { e.Ran = append(e.Ran, "get"); return nil }

type groupCmd struct {
	Sub subCmd `cmd:"" help:"Sub."`
}

type subCmd struct {
	X string `help:"X."`
	A bool   `xor:"ab" help:"A."`
	B bool   `xor:"ab" help:"B."`
	Y string `arg:"" optional:"" default:"why" help:"Y."`
}

func (c *subCmd) Run(e *Env) error { e.Ran = append(e.Ran, "sub"); return nil }

type slowCmd struct {
	Wait time.Duration `help:"kong's own mapper."`
}

func (c *slowCmd) BeforeApply() error { return nil }

func (c *slowCmd) Run(e *Env) error { return nil }

type validatedCmd struct {
	Z string `help:"Z."`
}

func (c *validatedCmd) Validate() error {
	if c.Z == "bad" {
		return errors.New("bad z")
	}
	return nil
}

func (c *validatedCmd) Run(e *Env) error { return nil }

// hooked is a flag type with a kong hook.
type hooked string

func (h *hooked) UnmarshalText(b []byte) error { *h = hooked(b); return nil }

func (h hooked) BeforeApply() error { return nil }

// Model returns kong's model of the toy's command line.
func Model() (*kong.Kong, error) {
	return kongcli.New("toy", func() string { return "A toy." }).Model(&grammar{})
}
