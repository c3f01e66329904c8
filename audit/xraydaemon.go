package audit

import (
	"fmt"
	"net"
	"strings"
)

// daemonUDPAddr resolves an AWS_XRAY_DAEMON_ADDRESS value to its UDP part.
func daemonUDPAddr(addr string) (*net.UDPAddr, error) {
	addr = strings.TrimSpace(addr)
	for _, f := range strings.Fields(addr) {
		switch {
		case strings.HasPrefix(f, "udp:"):
			addr = strings.TrimPrefix(f, "udp:")
		case strings.HasPrefix(f, "tcp:"):
			continue // sampling rules only; spans go over UDP
		default:
			addr = f
		}
	}
	udp, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("audit: x-ray daemon address %q: %w", addr, err)
	}
	return udp, nil
}
