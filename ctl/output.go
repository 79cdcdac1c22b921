package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
)

// format is an output format (-o).
type format string

const (
	formatTable format = "table"
	formatJSON  format = "json"
)

// print writes a command's result: v as JSON under -o json, else whatever
// human renders. v is a proto.Message, a messages list, or any value
// encoding/json accepts.
func (e *env) print(v any, human func(w io.Writer) error) error {
	if e.opts.output == formatJSON {
		return writeJSON(e.out, v)
	}
	return human(e.out)
}

// messages is a list of proto messages printed as a JSON array.
type messages []proto.Message

// messageList converts a typed slice of messages for printing.
func messageList[M proto.Message](ms []M) messages {
	out := make(messages, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	var raw []byte
	var err error
	switch v := v.(type) {
	case proto.Message:
		raw, err = marshalProto(v.ProtoReflect())
	case messages:
		raw = []byte{'['}
		for i, m := range v {
			if i > 0 {
				raw = append(raw, ',')
			}
			if raw, err = appendMessage(raw, m.ProtoReflect()); err != nil {
				break
			}
		}
		raw = append(raw, ']')
	default:
		raw, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

// table is a borderless table the way kubectl and etcdctl print them:
// columns separated by two spaces, header in capitals, numbers right-aligned
// (with their header), one line per row,
// so awk and cut work on it. (go-pretty would need go-runewidth, which
// go.sum lacks; aligned columns need no more than this.)
type table struct {
	header []string
	right  []bool
	rows   [][]string
}

// newTable returns a table with the given column headers; columns named in
// right are right-aligned (numbers).
func newTable(header []string, right ...string) *table {
	t := &table{header: header, right: make([]bool, len(header))}
	for i, h := range header {
		t.right[i] = slices.Contains(right, h)
	}
	return t
}

// row appends a row; cells are formatted with fmt.Sprint and missing cells
// are empty.
func (t *table) row(cells ...any) {
	r := make([]string, len(t.header))
	for i := range min(len(cells), len(r)) {
		r[i] = printable(fmt.Sprint(cells[i]))
	}
	t.rows = append(t.rows, r)
}

// render writes the header and the rows.
func (t *table) render(w io.Writer) error {
	all := append([][]string{t.header}, t.rows...)
	widths := make([]int, len(t.header))
	for _, r := range all {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var out strings.Builder
	for _, r := range all {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if t.right[i] {
				line.WriteString(pad + c)
			} else {
				line.WriteString(c + pad)
			}
		}
		out.WriteString(strings.TrimRight(line.String(), " "))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// printable replaces control characters (a newline or tab in a node name
// or label) so that one row stays one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

// keyValues renders label/value pairs as an aligned two-column list, for
// commands whose answer is one record.
func keyValues(w io.Writer, pairs [][2]string) error {
	width := 0
	for _, p := range pairs {
		width = max(width, len(p[0]))
	}
	var b strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, p[0]+":", printable(p[1]))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
