// Package security makes and loads the certificates that secure a cosmosd
// cluster's transports (issue 12): TLS on every listener (CQL, admin gRPC,
// HTTP), mutual TLS between nodes (raft transport and forwarding), and TLS
// to etcd.
//
// # Files
//
// One directory (--certs-dir) holds what `cosmosd cert` writes, the same
// layout as `cockroach cert`:
//
//	ca.crt               the cluster CA certificates (a bundle: during a CA
//	                     rotation it holds the new and the old CA)
//	ca.key               the CA's private key; needed only to sign, keep it
//	                     off the nodes (--ca-key puts it elsewhere)
//	node.crt, node.key   a node's certificate (CN "node", server and client
//	                     use, SANs for every name and address of the host)
//	client.NAME.crt/.key a client's certificate (CN NAME, client use only)
//
// Keys are written 0600, certificates 0644, always through a temporary
// file renamed into place, so a node reloading them never reads half a
// file. Nothing is overwritten without Overwrite.
//
// # Reloading
//
// A Reloader holds the current CA pool and certificate of one set of files
// and re-reads them when their contents change (Run polls them) or when
// asked (Reload, which the daemon calls on SIGHUP). Servers (ServerConfig)
// and gRPC clients (ClientCredentials) read the current material per
// handshake (GetConfigForClient, GetClientCertificate, and a verifier
// against the current pool and the host dialed), so new connections use
// the new files while established ones continue. ClientConfig, for
// clients that dial by themselves, presents the current certificate but
// verifies servers against the CA bundle of the time it was called. A set of
// files that does not load (a key that does not match its certificate, a
// file half-copied by hand) is refused and the previous material stays in
// use; the error is logged once per distinct content. Key material is
// never logged or put into an error.
//
// # Who is who
//
// A node certificate is one signed by a CA in ca.crt with CN "node" and
// both server and client extended key usage. Internode servers and
// clients accept only node certificates from the peer (RequireNode), so a
// client certificate of the same CA (an operator's, an application's)
// cannot send raft messages or forwarded requests. The admin API accepts
// any client certificate of the cluster CA. `cert create-client` refuses
// the name "node".
package security
