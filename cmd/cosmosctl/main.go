// Command cosmosctl looks at and steers a cosmosd cluster through the admin
// API of any of its nodes. See package ctl for the commands and the contract.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cosmosd/cosmosd/ctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := ctl.Main(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
