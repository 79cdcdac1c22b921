// Command cosmosd runs a cosmosd node.
package main

import (
	"fmt"
	"os"

	"github.com/cosmosd/cosmosd/daemon"
)

func main() {
	if err := daemon.App().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "cosmosd:", err)
		os.Exit(1)
	}
}
