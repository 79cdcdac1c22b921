package security

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// File names inside a certificates directory.
const (
	CAFile       = "ca.crt"
	CAKeyFile    = "ca.key"
	NodeCertFile = "node.crt"
	NodeKeyFile  = "node.key"
	// NodeCN is the common name of every node certificate; internode
	// connections accept only certificates that carry it (RequireNode).
	NodeCN = "node"
	// Organization is the subject organization of the certificates made
	// here.
	Organization = "Cosmosd"
)

// ClientCertFile is the certificate file of client name.
func ClientCertFile(name string) string { return "client." + name + ".crt" }

// ClientKeyFile is the key file of client name.
func ClientKeyFile(name string) string { return "client." + name + ".key" }

// Default lifetimes, as CockroachDB's: the CA outlives the certificates it
// signs, which are rotated well before it expires.
const (
	DefaultCALifetime   = 10 * 365 * 24 * time.Hour
	DefaultCertLifetime = 5 * 365 * 24 * time.Hour
)

// Key types of new keys.
const (
	KeyECDSA   = "ecdsa"   // ECDSA on P-256 (default): every TLS stack has it
	KeyEd25519 = "ed25519" // Ed25519: smaller and faster; needs OpenSSL 1.1.1+ in clients
)

// ErrExists is returned (wrapped, with the path) when a file would be
// overwritten without Overwrite.
var ErrExists = errors.New("security: file exists (use --overwrite to replace it)")

// CertOptions configure the making of a certificate.
type CertOptions struct {
	// Dir is the certificates directory; created 0700 when missing.
	// Required.
	Dir string
	// CAKey is the CA's key file. Default Dir/ca.key.
	CAKey string
	// Lifetime of the new certificate. Default DefaultCALifetime for a CA,
	// DefaultCertLifetime otherwise. A certificate never outlives the CA
	// that signs it: its end is capped at the CA's.
	Lifetime time.Duration
	// KeyType is KeyECDSA (default) or KeyEd25519.
	KeyType string
	// Overwrite replaces existing files. Without it nothing is replaced.
	Overwrite bool
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

func (o *CertOptions) setDefaults(lifetime time.Duration) error {
	if o.Dir == "" {
		return errors.New("security: a certificates directory is required (--certs-dir)")
	}
	if o.CAKey == "" {
		o.CAKey = filepath.Join(o.Dir, CAKeyFile)
	}
	if o.Lifetime == 0 {
		o.Lifetime = lifetime
	}
	if o.Lifetime < 0 {
		return fmt.Errorf("security: lifetime %s must be positive", o.Lifetime)
	}
	if o.KeyType == "" {
		o.KeyType = KeyECDSA
	}
	if o.KeyType != KeyECDSA && o.KeyType != KeyEd25519 {
		return fmt.Errorf("security: key type %q: want %s or %s", o.KeyType, KeyECDSA, KeyEd25519)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return os.MkdirAll(o.Dir, 0o700)
}

// CreateCA makes a CA key and certificate: Dir/ca.crt and the CA key
// (CAKey). With Overwrite and an existing ca.crt, the new CA is put first
// in the bundle and the old CA certificates that have not expired are
// kept after it, so that nodes trust certificates of both while they are
// rotated (docs/security.md, "Rotating the CA").
func CreateCA(o CertOptions) (*x509.Certificate, error) {
	if err := o.setDefaults(DefaultCALifetime); err != nil {
		return nil, err
	}
	caPath := filepath.Join(o.Dir, CAFile)
	if err := o.refuseExisting(caPath, o.CAKey); err != nil {
		return nil, err
	}
	var keep []*x509.Certificate
	if o.Overwrite {
		if old, err := readCerts(caPath); err == nil {
			for _, c := range old {
				if o.Now().Before(c.NotAfter) {
					keep = append(keep, c)
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	key, err := newKey(o.KeyType)
	if err != nil {
		return nil, err
	}
	now := o.Now()
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{Organization: []string{Organization}, CommonName: "Cosmosd CA"},
		NotBefore:             now.Add(-time.Hour), // tolerate clocks somewhat behind
		NotAfter:              now.Add(o.Lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	cert, err := sign(tmpl, nil, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if err := writeKey(o.CAKey, key); err != nil {
		return nil, err
	}
	bundle := certPEM(cert)
	for _, c := range keep {
		bundle = append(bundle, certPEM(c)...)
	}
	if err := writeFileAtomic(caPath, bundle, 0o644); err != nil {
		return nil, err
	}
	return cert, nil
}

// CreateNode makes Dir/node.crt and Dir/node.key, signed by the CA, valid
// for every host name and IP address in hosts and for localhost,
// 127.0.0.1 and ::1 (cosmosctl and the health checks on the host itself,
// the embedded etcd).
func CreateNode(o CertOptions, hosts []string) (*x509.Certificate, error) {
	if err := o.setDefaults(DefaultCertLifetime); err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, errors.New("security: a node certificate needs at least one host name or address")
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{Organization}, CommonName: NodeCN},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range append(slices.Clone(hosts), "localhost", "127.0.0.1", "::1") {
		h = strings.TrimSpace(strings.Trim(h, "[]"))
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return o.createSigned(tmpl, NodeCertFile, NodeKeyFile)
}

var clientName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// CreateClient makes Dir/client.NAME.crt and .key, signed by the CA, with
// CN name and client use only.
func CreateClient(o CertOptions, name string) (*x509.Certificate, error) {
	if err := o.setDefaults(DefaultCertLifetime); err != nil {
		return nil, err
	}
	if !clientName.MatchString(name) {
		return nil, fmt.Errorf("security: client name %q: want letters, digits, '_', '.' or '-'", name)
	}
	if name == NodeCN {
		// A client certificate named "node" would look like a node's to
		// anything that checked only the common name.
		return nil, fmt.Errorf("security: client name %q is reserved for node certificates", name)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{Organization}, CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return o.createSigned(tmpl, ClientCertFile(name), ClientKeyFile(name))
}

// createSigned signs tmpl with the CA and writes the certificate and a new
// key into Dir.
func (o *CertOptions) createSigned(tmpl *x509.Certificate, certName, keyName string) (*x509.Certificate, error) {
	certPath, keyPath := filepath.Join(o.Dir, certName), filepath.Join(o.Dir, keyName)
	if err := o.refuseExisting(certPath, keyPath); err != nil {
		return nil, err
	}
	ca, caKey, err := loadCA(filepath.Join(o.Dir, CAFile), o.CAKey)
	if err != nil {
		return nil, err
	}
	key, err := newKey(o.KeyType)
	if err != nil {
		return nil, err
	}
	now := o.Now()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(o.Lifetime)
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	cert, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, err
	}
	// The key first: a certificate without its key is useless, a key
	// without its certificate is simply made again.
	if err := writeKey(keyPath, key); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(certPath, certPEM(cert), 0o644); err != nil {
		return nil, err
	}
	return cert, nil
}

func (o *CertOptions) refuseExisting(paths ...string) error {
	if o.Overwrite {
		return nil
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s: %w", p, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("security: %w", err)
		}
	}
	return nil
}

// loadCA returns the CA certificate of caKeyPath's key from the bundle at
// caPath (the bundle may hold older CAs too) and the key.
func loadCA(caPath, caKeyPath string) (*x509.Certificate, crypto.Signer, error) {
	certs, err := readCerts(caPath)
	if err != nil {
		return nil, nil, fmt.Errorf("security: CA certificate: %w (run `cosmosd cert create-ca` first)", err)
	}
	key, err := readKey(caKeyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("security: CA key: %w", err)
	}
	for _, c := range certs {
		if pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); ok && pub.Equal(key.Public()) && c.IsCA {
			return c, key, nil
		}
	}
	return nil, nil, fmt.Errorf("security: no certificate in %s belongs to the CA key %s", caPath, caKeyPath)
}

func newKey(kind string) (crypto.Signer, error) {
	switch kind {
	case KeyEd25519:
		_, k, err := ed25519.GenerateKey(rand.Reader)
		return k, err
	default:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, signer crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return nil, fmt.Errorf("security: sign certificate: %w", err)
	}
	return x509.ParseCertificate(der)
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("security: encode key: %w", err)
	}
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// writeFileAtomic writes data to a temporary file in path's directory with
// mode and renames it over path, so a reader sees the old file or the new
// one, never a part.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("security: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return fmt.Errorf("security: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("security: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("security: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("security: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("security: %w", err)
	}
	return nil
}

// readCerts reads every certificate of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseCerts(path, data)
}

func parseCerts(path string, data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return out, nil
}

// readKey reads a PEM private key (PKCS#8, or EC/PKCS#1 as other tools
// write them). Errors name the file, never its contents.
func readKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, fmt.Errorf("%s: no PEM key", path)
	}
	var k any
	switch b.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot parse the key", path)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: unsupported key type %T", path, k)
	}
	return s, nil
}

// CertInfo describes one certificate file for `cosmosd cert list`.
type CertInfo struct {
	File     string
	Subject  string
	Serial   string
	NotAfter time.Time
	Names    []string // SANs: DNS names and IP addresses
	IsCA     bool
}

// ListCerts describes every certificate in dir (*.crt), bundles
// certificate by certificate.
func ListCerts(dir string) ([]CertInfo, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var out []CertInfo
	for _, p := range paths {
		certs, err := readCerts(p)
		if err != nil {
			return nil, fmt.Errorf("security: %w", err)
		}
		for _, c := range certs {
			ci := CertInfo{File: filepath.Base(p), Subject: c.Subject.CommonName, Serial: SerialString(c),
				NotAfter: c.NotAfter, Names: slices.Clone(c.DNSNames), IsCA: c.IsCA}
			for _, ip := range c.IPAddresses {
				ci.Names = append(ci.Names, ip.String())
			}
			out = append(out, ci)
		}
	}
	return out, nil
}

// SerialString is a certificate's serial number in hex, as openssl prints
// it.
func SerialString(c *x509.Certificate) string {
	return strings.ToUpper(c.SerialNumber.Text(16))
}
