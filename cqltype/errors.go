package cqltype

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns matches exactly one of
// them with errors.Is. The message of the returned error itself (Error())
// is worded like Cassandra's, without a package prefix, so the executor can
// send it to a client unchanged.
var (
	// ErrInvalidType: Parse rejected a type (syntax, unknown name, or a
	// Cassandra rule such as non-frozen nested collections).
	ErrInvalidType = errors.New("cqltype: invalid type")
	// ErrInvalidValue: serialized bytes are malformed for the type, a Go
	// value cannot be marshalled, or a literal cannot be converted.
	ErrInvalidValue = errors.New("cqltype: invalid value")
	// ErrInvalidConstant: a literal of this kind can never be assigned to
	// the type (Cassandra's "Invalid STRING constant ..."). The error is a
	// *ConstantError.
	ErrInvalidConstant = errors.New("cqltype: invalid constant")
)

// Error carries a Cassandra-worded message and the sentinel it matches.
type Error struct {
	sentinel error
	msg      string
}

func (e *Error) Error() string { return e.msg }

// Unwrap returns the sentinel (ErrInvalidType or ErrInvalidValue).
func (e *Error) Unwrap() error { return e.sentinel }

func typeErrorf(format string, args ...any) error {
	return &Error{sentinel: ErrInvalidType, msg: fmt.Sprintf(format, args...)}
}

func valueErrorf(format string, args ...any) error {
	return &Error{sentinel: ErrInvalidValue, msg: fmt.Sprintf(format, args...)}
}

// ConstantError reports a literal whose kind can never be assigned to Type,
// e.g. a quoted string for an int column.
type ConstantError struct {
	Lit  LitKind
	Text string
	Type Type
}

// Error omits the column name, which only the caller knows; see Message.
func (e *ConstantError) Error() string {
	return fmt.Sprintf("Invalid %s constant (%s) of type %s", e.Lit, e.Text, e.Type)
}

// Message returns Cassandra's exact wording for the column named column:
// `Invalid STRING constant (3) for "col" of type int`.
func (e *ConstantError) Message(column string) string {
	return fmt.Sprintf("Invalid %s constant (%s) for \"%s\" of type %s", e.Lit, e.Text, column, e.Type)
}

// Unwrap returns ErrInvalidConstant.
func (e *ConstantError) Unwrap() error { return ErrInvalidConstant }
