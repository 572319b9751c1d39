// Package proto holds the generated gRPC code of the driver plugin protocol.
// Regenerate with `go generate ./drivers/plugin/proto` (needs protoc from
// Debian's protobuf-compiler, and protoc-gen-go and protoc-gen-go-grpc).
package proto

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative driver.proto
