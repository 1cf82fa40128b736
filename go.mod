module github.com/tether-sh/tether

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/rogpeppe/go-internal v1.16.0
	golang.org/x/sys v0.50.0
)

require golang.org/x/tools v0.26.0 // indirect
