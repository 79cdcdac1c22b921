package daemon

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/storage"
)

// The node id lives twice: in <data_dir>/node-id, where operators and tools
// read it, and in the store (storage.NodeIdentityKey), next to the raft
// state written under it. The two must go together. A node whose store was
// lost (disk replaced, directory wiped) but whose node-id file survived
// would otherwise rejoin its raft groups as the same voter with an empty
// hard state and could vote twice in one term, electing two leaders
// (reliability issue). bindNodeID decides at start:
//
//	store identity  node-id file     store data   outcome
//	id S            S                -            S
//	id S            replaced by S    -            S; rewrite the file (a crash interrupted a replacement)
//	id S            other            -            refuse to start
//	id S            missing          -            S; rewrite the file
//	none            F                yes          F; write the identity (store from before identities)
//	none            missing          yes          refuse to start (whose store is it?)
//	none            F                no           store lost: new id from etcd; F's replicas are
//	                                              repaired by the controller as a dead node's
//	none            missing          no           a new node: new id from etcd
//
// Writes go store first (synced), then the file (fsynced, renamed, directory
// fsynced), and the identity of a replacement records the id it replaced.
// So a crash at any point leaves a state the table maps to the right
// outcome: an id allocated but not written is wasted and allocated anew; a
// store identity without its file is rewritten into the file; a replacement
// whose file still holds the old id is finished.

// nodeIDFile is the node id file's name in the data dir.
const nodeIDFile = "node-id"

// nodeIdentity is the value of storage.NodeIdentityKey: the node id and,
// when this store replaced a lost one, the id of the node it replaced.
// Encoded as id(8) [replaced(8)], big-endian.
type nodeIdentity struct {
	id       uint64
	replaced uint64
}

func (ni nodeIdentity) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, ni.id)
	if ni.replaced != 0 {
		b = binary.BigEndian.AppendUint64(b, ni.replaced)
	}
	return b
}

func decodeNodeIdentity(b []byte) (nodeIdentity, error) {
	var ni nodeIdentity
	switch len(b) {
	case 16:
		ni.replaced = binary.BigEndian.Uint64(b[8:])
		fallthrough
	case 8:
		ni.id = binary.BigEndian.Uint64(b[:8])
	default:
		return ni, fmt.Errorf("node identity in the store is corrupt: %x", b)
	}
	if ni.id == 0 {
		return ni, fmt.Errorf("node identity in the store is corrupt: %x", b)
	}
	return ni, nil
}

// bindNodeID returns the node's id, reconciling the node-id file with the
// store's identity as the table above says; n.store must be open and
// nothing else may have written to it yet.
func (n *Node) bindNodeID(ctx context.Context) (uint64, error) {
	dir := n.cfg.DataDir
	fileID, err := readNodeIDFile(n.store.FS(), dir)
	if err != nil {
		return 0, err
	}
	raw, ok, err := n.store.Get(storage.NodeIdentityKey())
	if err != nil {
		return 0, fmt.Errorf("read node identity from the store: %w", err)
	}
	if ok {
		ni, err := decodeNodeIdentity(raw)
		if err != nil {
			return 0, err
		}
		switch {
		case fileID == ni.id:
			return ni.id, nil
		case fileID == 0:
			n.logger.Warn("node id file missing; restored from the store", "node", ni.id)
		case fileID == ni.replaced:
			n.logger.Warn("node id file still names the node this store replaced; finishing the replacement",
				"node", ni.id, "replaced_node", ni.replaced)
		default:
			return 0, fmt.Errorf("data dir %s: %s names node %d but the store belongs to node %d: refusing to start "+
				"(the store or the node-id file comes from another node; put back the matching node-id file, "+
				"or remove the store to join as a new node)", dir, nodeIDFile, fileID, ni.id)
		}
		if err := writeNodeIDFile(n.store.FS(), dir, ni.id); err != nil {
			return 0, err
		}
		return ni.id, nil
	}
	hasData, err := storeHasData(n.store)
	if err != nil {
		return 0, err
	}
	switch {
	case hasData && fileID != 0:
		// Written by a version that kept the id in the file only.
		if err := writeNodeIdentity(n.store, nodeIdentity{id: fileID}); err != nil {
			return 0, err
		}
		n.logger.Info("recorded node id in the store", "node", fileID)
		return fileID, nil
	case hasData:
		return 0, fmt.Errorf("data dir %s: the store holds data but neither it nor a %s file says which node it belongs to: "+
			"refusing to start (put back the node-id file, or remove the store to join as a new node)", dir, nodeIDFile)
	}
	id, err := cluster.AllocateID(ctx, n.metaKV, "node", 1)
	if err != nil {
		return 0, fmt.Errorf("allocate node id: %w", err)
	}
	if err := writeNodeIdentity(n.store, nodeIdentity{id: id, replaced: fileID}); err != nil {
		return 0, err
	}
	if err := writeNodeIDFile(n.store.FS(), dir, id); err != nil {
		return 0, err
	}
	if fileID != 0 {
		// Reusing fileID would rejoin its raft groups as the same voter
		// with no memory of its votes.
		n.logger.Error("store lost: the replicas of the node this data dir belonged to are gone; "+
			"joining as a new node, and the controller repairs the old node's replicas as a dead node's",
			"node", id, "lost_node", fileID, "store", filepath.Join(dir, "store"))
		return id, nil
	}
	n.logger.Info("allocated node id", "node", id)
	return id, nil
}

// storeHasData reports whether the store holds any key.
func storeHasData(s *storage.Engine) (bool, error) {
	it, err := s.NewIter(storage.Span{})
	if err != nil {
		return false, fmt.Errorf("scan the store: %w", err)
	}
	has := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return false, fmt.Errorf("scan the store: %w", err)
	}
	return has, nil
}

// writeNodeIdentity records the identity in the store, synced: it must be
// durable before the node-id file names the id.
func writeNodeIdentity(s *storage.Engine, ni nodeIdentity) error {
	b := s.NewWriteBatch()
	defer b.Close()
	if err := b.Set(storage.NodeIdentityKey(), ni.encode()); err != nil {
		return fmt.Errorf("write node identity: %w", err)
	}
	if err := b.Commit(true); err != nil {
		return fmt.Errorf("write node identity: %w", err)
	}
	return nil
}

// readNodeIDFile returns the id in dir's node-id file, 0 if there is none.
func readNodeIDFile(fs vfs.FS, dir string) (uint64, error) {
	path := fs.PathJoin(dir, nodeIDFile)
	f, err := fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read node id: %w", err)
	}
	raw, err := io.ReadAll(f)
	if err = errors.Join(err, f.Close()); err != nil {
		return 0, fmt.Errorf("read node id: %w", err)
	}
	id, perr := strconv.ParseUint(strings.TrimSpace(string(raw)), 10, 64)
	if perr != nil || id == 0 {
		return 0, fmt.Errorf("node id file %s is corrupt: %q", path, raw)
	}
	return id, nil
}

// writeNodeIDFile replaces dir's node-id file durably: write a temporary
// file, fsync it, rename it over the old one, fsync the directory. Without
// the fsyncs a crash could leave an empty file, or no file, behind a rename
// the file system had already made durable.
func writeNodeIDFile(fs vfs.FS, dir string, id uint64) error {
	path := fs.PathJoin(dir, nodeIDFile)
	tmp := path + ".tmp"
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("write node id: %w", err)
	}
	_, err = f.Write([]byte(strconv.FormatUint(id, 10) + "\n"))
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("write node id %s: %w", tmp, err)
	}
	if err := fs.Rename(tmp, path); err != nil {
		return fmt.Errorf("write node id: %w", err)
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("write node id: %w", err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("write node id: sync %s: %w", dir, err)
	}
	return nil
}
