//go:build linux

package afpacket_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/sys/unix"

	"github.com/flowmon/flowmon/internal/testutil/netnstest"
)

// writeVLANTrace writes a pcap of TCP and UDP packets over IPv4 and IPv6,
// untagged, behind one 802.1Q tag, and behind an 802.1ad tag and an
// 802.1Q one (QinQ), of several sizes.
func writeVLANTrace(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vlan.pcap")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	src, dst := net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}
	for i := range 60 {
		var ls []gopacket.SerializableLayer
		eth := &layers.Ethernet{SrcMAC: src, DstMAC: dst}
		ls = append(ls, eth)
		inner := layers.EthernetTypeIPv4
		if i%4 == 3 {
			inner = layers.EthernetTypeIPv6
		}
		switch i % 3 {
		case 0:
			eth.EthernetType = inner
		case 1:
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: uint16(100 + i), Priority: uint8(i % 8), Type: inner})
		case 2:
			eth.EthernetType = layers.EthernetTypeQinQ
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeDot1Q},
				&layers.Dot1Q{VLANIdentifier: uint16(200 + i), Type: inner})
		}
		var nl gopacket.NetworkLayer
		if inner == layers.EthernetTypeIPv4 {
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
				SrcIP: net.IPv4(10, 0, 0, byte(i)), DstIP: net.IPv4(10, 0, 1, 1)}
			if i%2 == 1 {
				ip.Protocol = layers.IPProtocolUDP
			}
			nl = ip
			ls = append(ls, ip)
		} else {
			ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
				SrcIP: net.ParseIP(fmt.Sprintf("fd00::%x", i+1)), DstIP: net.ParseIP("fd00::1:1")}
			if i%2 == 1 {
				ip.NextHeader = layers.IPProtocolUDP
			}
			nl = ip
			ls = append(ls, ip)
		}
		if i%2 == 0 {
			tcp := &layers.TCP{SrcPort: layers.TCPPort(40000 + i), DstPort: 443, Seq: uint32(i), ACK: true, Window: 100}
			tcp.SetNetworkLayerForChecksum(nl)
			ls = append(ls, tcp)
		} else {
			udp := &layers.UDP{SrcPort: layers.UDPPort(40000 + i), DstPort: 53}
			udp.SetNetworkLayerForChecksum(nl)
			ls = append(ls, udp)
		}
		ls = append(ls, gopacket.Payload(make([]byte, (i*97)%1400)))
		buf := gopacket.NewSerializeBuffer()
		if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		ci := gopacket.CaptureInfo{CaptureLength: len(data), Length: len(data)}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// tunDev is a tun device (no link header, ARPHRD_NONE) in a namespace:
// what is written to fd arrives on it as received.
type tunDev struct {
	name string
	fd   int
}

func openTun(t testing.TB, n *netnstest.Net) *tunDev {
	t.Helper()
	d := &tunDev{name: n.A[:len(n.A)-1] + "t", fd: -1}
	err := n.Do(func() error {
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		d.fd = fd
		ifr, err := unix.NewIfreq(d.name)
		if err != nil {
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			return fmt.Errorf("make tun %s: %w", d.name, err)
		}
		return nil
	})
	if d.fd >= 0 {
		t.Cleanup(func() { unix.Close(d.fd) })
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := n.Cmd("ip", "link", "set", d.name, "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v: %s", d.name, err, out)
	}
	return d
}

// play writes every packet of a raw-IP pcap into the tun device.
func (d *tunDev) play(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return err
	}
	for {
		data, _, err := r.ZeroCopyReadPacketData()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := unix.Write(d.fd, data); err != nil {
			return fmt.Errorf("write %d bytes to %s: %w", len(data), d.name, err)
		}
	}
}
