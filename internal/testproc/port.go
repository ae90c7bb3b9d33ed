package testproc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// FreePort returns a port on ip that is free for TCP and UDP a moment ago,
// for a daemon under test to listen on (memberlist takes both on its
// gossip port).
//
// It draws the port at random below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768 and up by default), not from port
// 0: the kernel hands the ports of that range to outgoing connections too,
// and with the test packages running side by side a port "free a moment
// ago" was taken by some client's connect before the daemon under test
// bound it often enough to fail a CI run ("bind: address already in use").
// Below the range only another listener can take it, and the random draw
// over some 20,000 ports makes two tests' draws meet rarely. It falls back
// to a kernel-chosen port if no drawn one is free.
func FreePort(ip string) (int, error) {
	lo, hi := 10000, ephemeralLow()-1
	if hi-lo < 1000 {
		return kernelPort(ip)
	}
	for range 64 {
		port := lo + rand.IntN(hi-lo+1)
		if free(ip, port) {
			return port, nil
		}
	}
	return kernelPort(ip)
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	v, err := strconv.Atoi(f[0])
	if err != nil || v <= 0 {
		return 32768
	}
	return v
}

// free reports whether port on ip can be listened on for TCP and UDP.
func free(ip string, port int) bool {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// kernelPort is a port the kernel chose on ip (free for TCP a moment ago).
func kernelPort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("testproc: no free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
