#!/usr/bin/env bash
# Regenerates the Go code of every .proto under proto/ with pinned tools:
# protoc from Debian's protobuf-compiler (3.21) and the Go plugins at the
# versions go.mod pins (tool directives), built from the module cache, so
# no network is needed once `go mod download` has run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
go build -o "$bin/protoc-gen-go-grpc" google.golang.org/grpc/cmd/protoc-gen-go-grpc
command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
mapfile -t files < <(cd proto && find . -name '*.proto' | sed 's|^\./||' | sort)
[ ${#files[@]} -gt 0 ] || exit 0
(cd proto && protoc -I . \
	--plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out=. --go_opt=paths=source_relative \
	--plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" --go-grpc_out=. --go-grpc_opt=paths=source_relative \
	"${files[@]}")
