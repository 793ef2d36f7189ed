//go:build !linux

// Package bpftest is Linux's: see bpftest_linux.go.
package bpftest
