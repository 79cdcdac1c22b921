package partition

import (
	"errors"
	"fmt"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// Error is a failure with a kvpb error code, the form in which partition
// errors cross the network and reach the router.
type Error struct {
	PB *kvpb.Error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.PB.GetCode(), e.PB.GetMessage())
}

// Errorf returns an *Error with the given code.
func Errorf(code kvpb.Error_Code, format string, args ...any) *Error {
	return &Error{PB: &kvpb.Error{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// ErrorCode returns the kvpb code of err, or UNKNOWN.
func ErrorCode(err error) kvpb.Error_Code {
	var e *Error
	if errors.As(err, &e) {
		return e.PB.GetCode()
	}
	return kvpb.Error_UNKNOWN
}

// AsPB converts err to its wire form.
func AsPB(err error) *kvpb.Error {
	var e *Error
	if errors.As(err, &e) {
		return e.PB
	}
	return &kvpb.Error{Code: kvpb.Error_UNKNOWN, Message: err.Error()}
}

// FromPB converts a wire error back; nil stays nil.
func FromPB(pb *kvpb.Error) error {
	if pb == nil {
		return nil
	}
	return &Error{PB: pb}
}

func rangeMismatch(desc *kvpb.Descriptor, token int64) *Error {
	e := Errorf(kvpb.Error_RANGE_MISMATCH, "partition %d holds tokens [%d, %d], not %d", desc.GetId(), desc.GetStart(), desc.GetEnd(), token)
	e.PB.Current = desc
	return e
}
