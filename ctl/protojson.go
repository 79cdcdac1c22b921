package ctl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// This file writes proto messages as JSON for scripts. It follows protojson
// with UseProtoNames and EmitUnpopulated (proto field names, every field
// present, unset messages as null, enums by name, bytes as base64) with one
// deliberate difference: 64-bit integers are JSON numbers, not strings, so
// that `jq '.bytes > 1000'` and Python's json compare numbers. protojson
// reads either form, so the output still parses back into the message.

// marshalProto encodes m as compact JSON.
func marshalProto(m protoreflect.Message) ([]byte, error) {
	return appendMessage(nil, m)
}

// appendMessage appends m as a JSON object, fields in declaration order.
func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	desc := m.Descriptor()
	if desc.FullName().Parent() == "google.protobuf" {
		// Well-known types (Timestamp, Duration, wrappers) have special
		// JSON forms; protojson knows them.
		raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m.Interface())
		if err != nil {
			return b, err
		}
		return append(b, raw...), nil
	}
	b = append(b, '{')
	fields := desc.Fields()
	first := true
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		// Like protojson: an unset member of a oneof is left out.
		if fd.ContainingOneof() != nil && !m.Has(fd) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, string(fd.Name()))
		b = append(b, ':')
		var err error
		switch {
		case fd.IsList():
			b, err = appendList(b, fd, m.Get(fd).List())
		case fd.IsMap():
			b, err = appendMap(b, fd, m.Get(fd).Map())
		case fd.Message() != nil && !m.Has(fd):
			b = append(b, "null"...)
		default:
			b, err = appendValue(b, fd, m.Get(fd))
		}
		if err != nil {
			return b, fmt.Errorf("field %s: %w", fd.FullName(), err)
		}
	}
	return append(b, '}'), nil
}

func appendList(b []byte, fd protoreflect.FieldDescriptor, l protoreflect.List) ([]byte, error) {
	b = append(b, '[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendValue(b, fd, l.Get(i)); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendMap writes a map as an object with its keys in sorted order, so the
// output is stable from run to run.
func appendMap(b []byte, fd protoreflect.FieldDescriptor, m protoreflect.Map) ([]byte, error) {
	type entry struct {
		key string
		val protoreflect.Value
	}
	var entries []entry
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		entries = append(entries, entry{k.String(), v})
		return true
	})
	slices.SortFunc(entries, func(x, y entry) int {
		switch {
		case x.key < y.key:
			return -1
		case x.key > y.key:
			return 1
		}
		return 0
	})
	b = append(b, '{')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e.key)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, fd.MapValue(), e.val); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendValue appends one singular value of field fd.
func appendValue(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		return appendString(b, v.String()), nil
	case protoreflect.BytesKind:
		return appendString(b, base64.StdEncoding.EncodeToString(v.Bytes())), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendString(b, string(ev.Name())), nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessage(b, v.Message())
	}
	return b, fmt.Errorf("unsupported kind %s", fd.Kind())
}

// appendFloat writes a float as JSON does; NaN and infinities, which JSON
// numbers cannot hold, as the strings protojson uses.
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	var raw []byte
	if bits == 32 {
		raw, _ = json.Marshal(float32(f)) // finite floats always encode
	} else {
		raw, _ = json.Marshal(f)
	}
	return append(b, raw...)
}

// appendString appends s as a JSON string without HTML escaping.
func appendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}
