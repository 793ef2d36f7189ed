module github.com/flowmon/flowmon

go 1.26.8

require (
	github.com/gopacket/gopacket v1.7.7 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
