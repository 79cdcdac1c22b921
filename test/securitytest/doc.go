// Package securitytest checks a secure cluster (issue 12,
// docs/security.md) from outside: real nodes with TLS on every listener
// and mutual TLS between them (testcluster Options.TLS), probed over
// loopback by clients with no certificate, one of another CA, or a
// cluster client certificate where a node certificate is required.
package securitytest
