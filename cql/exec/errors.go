package exec

import (
	"errors"
	"fmt"
)

// Code is a CQL error code (native protocol v4 §9).
type Code int32

// Error codes the executor returns.
const (
	CodeServer        Code = 0x0000
	CodeProtocol      Code = 0x000A
	CodeBadCreds      Code = 0x0100
	CodeUnavailable   Code = 0x1000
	CodeOverloaded    Code = 0x1001
	CodeTruncate      Code = 0x1003
	CodeWriteTimeout  Code = 0x1100
	CodeReadTimeout   Code = 0x1200
	CodeSyntax        Code = 0x2000
	CodeUnauthorized  Code = 0x2100
	CodeInvalid       Code = 0x2200
	CodeConfig        Code = 0x2300
	CodeAlreadyExists Code = 0x2400
	CodeUnprepared    Code = 0x2500
)

// Error is a failure reported to the client as a CQL ERROR message. The
// extra fields are set only for the codes that carry them.
type Error struct {
	Code    Code
	Message string

	// Unavailable, WriteTimeout, ReadTimeout.
	Consistency uint16
	Required    int32 // required / blockfor
	Alive       int32 // alive / received
	WriteType   string
	DataPresent bool
	// AlreadyExists.
	Keyspace, Table string
	// Unprepared.
	PreparedID []byte
}

func (e *Error) Error() string { return fmt.Sprintf("cql error 0x%04x: %s", int32(e.Code), e.Message) }

func newErr(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an Invalid (0x2200) error.
func Invalid(format string, args ...any) *Error { return newErr(CodeInvalid, format, args...) }

// Syntax returns a Syntax (0x2000) error.
func Syntax(format string, args ...any) *Error { return newErr(CodeSyntax, format, args...) }

// ServerError returns a Server (0x0000) error.
func ServerError(format string, args ...any) *Error { return newErr(CodeServer, format, args...) }

// AsError converts any error to an *Error, mapping unknown errors to a
// server error that names the cause.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return ServerError("%v", err)
}
