//go:build !unix

package gateway

func processCPU() int64 { return 0 }
