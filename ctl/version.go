package ctl

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/urfave/cli/v2"
)

// versionInfo is the JSON form of "cosmosctl version".
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// versionCommand prints cosmosctl's own build; it does not contact the
// cluster (nodes list shows the nodes' versions).
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of cosmosctl",
		Flags: leafFlags(),
		Action: run(func(_ context.Context, _ *cli.Context, e *env) error {
			v := versionInfo{Version: Version, Commit: Commit, BuildDate: BuildDate,
				GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
			return e.print(v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "cosmosctl %s (commit %s, built %s, %s %s)\n", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
				return err
			})
		}),
	}
}
