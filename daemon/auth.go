package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cosmosd/cosmosd/auth"
	"github.com/cosmosd/cosmosd/cluster"
)

// startAuth prepares CQL authentication (config authenticator): the store
// of roles, the first superuser of a cluster that has no role yet, and the
// CQL server's authenticator, nil with allow-all.
func (n *Node) startAuth(ctx context.Context) (*cluster.Roles, *auth.Authenticator, error) {
	roles := cluster.NewRoles(n.meta)
	if n.cfg.Authenticator != "password" {
		n.logger.Info("authentication is off (authenticator allow-all): any client that reaches the CQL port may read and change everything")
		return roles, nil, nil
	}
	if err := n.bootstrapSuperuser(ctx, roles); err != nil {
		return nil, nil, err
	}
	authn := auth.NewAuthenticator(auth.LoginConfig{
		State:    func() *auth.State { return n.meta.State().Auth },
		Refresh:  n.refreshRoles,
		HashCost: passwordHashCost(n.cfg.Knobs),
		Logger:   n.logger.With("component", "auth"),
	})
	return roles, authn, nil
}

// refreshRoles brings the node's metadata, roles included, up to etcd's
// current revision; a login about to fail calls it (auth.LoginConfig
// Refresh). An etcd error leaves the roles as they were.
func (n *Node) refreshRoles() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = n.meta.CatchUp(ctx)
}

// passwordHashCost is the bcrypt cost of the passwords the node sets.
func passwordHashCost(k *Knobs) int {
	if k != nil && k.PasswordHashCost > 0 {
		return k.PasswordHashCost
	}
	return auth.DefaultHashCost
}

// bootstrapSuperuser creates the superuser role, with the password of
// superuser_password_file, when the cluster has no role at all: the first
// start of a cluster with authentication. Concurrent first starts agree
// (one creates it, the others find it). Unlike Cassandra there is no
// default superuser password: without the file, starting fails.
func (n *Node) bootstrapSuperuser(ctx context.Context, roles *cluster.Roles) error {
	if n.meta.State().Auth.NumRoles() > 0 {
		if n.cfg.SuperuserPasswordFile != "" {
			n.logger.Info("roles exist: superuser_password_file is not used", "file", n.cfg.SuperuserPasswordFile)
		}
		return nil
	}
	if n.cfg.SuperuserPasswordFile == "" {
		return fmt.Errorf("authenticator password: the cluster has no role yet and superuser_password_file (--superuser-password-file) is not set; "+
			"give it a file holding the password of the superuser role %q (there is no default password)", n.cfg.Superuser)
	}
	password, err := n.readPasswordFile(n.cfg.SuperuserPasswordFile)
	if err != nil {
		return err
	}
	hash, err := auth.HashPassword(password, passwordHashCost(n.cfg.Knobs))
	if err != nil {
		return fmt.Errorf("superuser_password_file %s: %w", n.cfg.SuperuserPasswordFile, err)
	}
	created := false
	err = roles.Update(ctx, func(m *auth.Mutable) error {
		created = false
		if len(m.Roles) > 0 {
			return nil
		}
		m.PutRole(&auth.Role{Name: n.cfg.Superuser, SaltedHash: hash, Superuser: true, Login: true})
		created = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("create superuser role %s: %w", n.cfg.Superuser, err)
	}
	if created {
		n.logger.Info("created superuser role", "role", n.cfg.Superuser)
	}
	return nil
}

// readPasswordFile reads the first line of a password file. A file others
// may read is accepted with a warning: the operator may have meant it (a
// secret mounted by an orchestrator), but it is worth saying.
func (n *Node) readPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("superuser_password_file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o004 != 0 {
		n.logger.Warn("superuser_password_file is readable by every user of the host", "file", path)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("superuser_password_file %s: %w", path, err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return "", fmt.Errorf("superuser_password_file %s: the password is empty", path)
	}
	return password, nil
}
