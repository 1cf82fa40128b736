package ledgercmd

import "github.com/tether-sh/tether/lib/cli"

func complete(t *cli.Tool) int { return 0 }

func help(t *cli.Tool, args []string) (int, bool) { return 0, false }
