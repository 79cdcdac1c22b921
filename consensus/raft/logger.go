package raft

import (
	"context"
	"fmt"
	"log/slog"
)

// raftLogger adapts slog to etcd raft's logger. Raft logs routine protocol
// steps (votes, probes, configuration switches) at Info; to us those are
// debug detail, and the engine logs the state changes that matter
// (leadership, membership, snapshots) itself. Panic and Fatal keep raft's
// contract of not returning: the engine recovers such panics per group; a
// panic on an inbound message restarts the replica's RawNode from its
// durable state (see stepRemote), any other stops the group (group.fail).
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) enabled(level slog.Level) bool {
	return r.l.Enabled(context.Background(), level)
}

func (r raftLogger) Debug(v ...any) {
	if r.enabled(slog.LevelDebug) {
		r.l.Debug("raft", "msg", fmt.Sprint(v...))
	}
}
func (r raftLogger) Debugf(format string, v ...any) {
	if r.enabled(slog.LevelDebug) {
		r.l.Debug("raft", "msg", fmt.Sprintf(format, v...))
	}
}
func (r raftLogger) Info(v ...any)                 { r.Debug(v...) }
func (r raftLogger) Infof(format string, v ...any) { r.Debugf(format, v...) }
func (r raftLogger) Warning(v ...any)              { r.l.Warn("raft", "msg", fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn("raft", "msg", fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any) { r.l.Error("raft", "msg", fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) {
	r.l.Error("raft", "msg", fmt.Sprintf(format, v...))
}
func (r raftLogger) Fatal(v ...any)                 { r.Panic(v...) }
func (r raftLogger) Fatalf(format string, v ...any) { r.Panicf(format, v...) }
func (r raftLogger) Panic(v ...any) {
	msg := fmt.Sprint(v...)
	r.l.Error("raft invariant violated", "msg", msg)
	panic(raftPanic(msg))
}
func (r raftLogger) Panicf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	r.l.Error("raft invariant violated", "msg", msg)
	panic(raftPanic(msg))
}

// raftPanic is the value raft panics with through raftLogger.
type raftPanic string
