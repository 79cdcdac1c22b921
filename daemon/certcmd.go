package daemon

import (
	"crypto/x509"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cosmosd/cosmosd/security"
)

// certCommand is `cosmosd cert`: the certificates of a secure cluster,
// made like CockroachDB's `cockroach cert` (docs/security.md).
func certCommand() *cli.Command {
	dirFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "certs-dir", Required: true, Usage: "directory of the certificates (created 0700 if missing)"}
	}
	caKeyFlag := func() cli.Flag {
		return &cli.StringFlag{Name: "ca-key", Usage: "the CA's key file (keep it off the nodes)", DefaultText: "CERTS-DIR/ca.key"}
	}
	common := func(lifetime time.Duration) []cli.Flag {
		return []cli.Flag{
			dirFlag(), caKeyFlag(),
			&cli.DurationFlag{Name: "lifetime", Value: lifetime, Usage: "validity of the certificate"},
			&cli.StringFlag{Name: "key-type", Value: security.KeyECDSA, Usage: "ecdsa (P-256) or ed25519"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace existing files"},
		}
	}
	opts := func(c *cli.Context) security.CertOptions {
		return security.CertOptions{Dir: c.String("certs-dir"), CAKey: c.String("ca-key"), Lifetime: c.Duration("lifetime"),
			KeyType: c.String("key-type"), Overwrite: c.Bool("overwrite")}
	}
	report := func(c *cli.Context, what, file string, cert *x509.Certificate) {
		fmt.Fprintf(c.App.Writer, "wrote %s (%s, serial %s, valid until %s)\n", file, what, security.SerialString(cert), cert.NotAfter.UTC().Format(time.DateOnly))
	}
	return &cli.Command{
		Name:   "cert",
		Usage:  "make the certificates of a secure cluster (CA, nodes, clients)",
		Action: groupAction,
		Subcommands: []*cli.Command{
			{
				Name:  "create-ca",
				Usage: "make the cluster CA: ca.crt and its key (with --overwrite, the old CA stays in ca.crt for a rotation)",
				Flags: common(security.DefaultCALifetime),
				Action: func(c *cli.Context) error {
					if err := refuseArgs(c); err != nil {
						return err
					}
					cert, err := security.CreateCA(opts(c))
					if err != nil {
						return err
					}
					report(c, "CA", security.CAFile, cert)
					return nil
				},
			},
			{
				Name:      "create-node",
				Usage:     "make node.crt and node.key for a node reached at every HOST (names and addresses; localhost and 127.0.0.1 are added)",
				ArgsUsage: "HOST...",
				Flags:     common(security.DefaultCertLifetime),
				Action: func(c *cli.Context) error {
					cert, err := security.CreateNode(opts(c), c.Args().Slice())
					if err != nil {
						return err
					}
					names := append([]string{}, cert.DNSNames...)
					for _, ip := range cert.IPAddresses {
						names = append(names, ip.String())
					}
					report(c, "node, for "+strings.Join(names, ", "), security.NodeCertFile, cert)
					return nil
				},
			},
			{
				Name:      "create-client",
				Usage:     "make client.NAME.crt and client.NAME.key (cosmosctl --user NAME, drivers' client certificates)",
				ArgsUsage: "NAME",
				Flags:     common(security.DefaultCertLifetime),
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fmt.Errorf("cert create-client: want one NAME, got %d arguments", c.NArg())
					}
					name := c.Args().First()
					cert, err := security.CreateClient(opts(c), name)
					if err != nil {
						return err
					}
					report(c, "client "+name, security.ClientCertFile(name), cert)
					return nil
				},
			},
			{
				Name:  "list",
				Usage: "show the certificates in the directory",
				Flags: []cli.Flag{dirFlag()},
				Action: func(c *cli.Context) error {
					if err := refuseArgs(c); err != nil {
						return err
					}
					certs, err := security.ListCerts(c.String("certs-dir"))
					if err != nil {
						return err
					}
					tw := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintln(tw, "FILE\tSUBJECT\tSERIAL\tNOT AFTER\tNAMES")
					for _, ci := range certs {
						subj := ci.Subject
						if ci.IsCA {
							subj += " (CA)"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ci.File, subj, ci.Serial, ci.NotAfter.UTC().Format(time.RFC3339), strings.Join(ci.Names, ","))
					}
					return tw.Flush()
				},
			},
		},
	}
}

// oneLineErr flattens an error for one line of stderr.
func oneLineErr(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}
