package ipmi

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// lossyProxy relays UDP between clients and a BMC and drops the datagrams
// drop picks (n counts the datagrams of one direction, from 1). It
// returns the proxy's port.
func lossyProxy(t testing.TB, bmcPort int, drop func(toBMC bool, n int64, pkt []byte) bool) int {
	t.Helper()
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	up := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: bmcPort}
	var (
		mu       sync.Mutex
		uplinks  = map[string]*net.UDPConn{}
		toBMC    atomic.Int64
		toClient atomic.Int64
		wg       sync.WaitGroup
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range uplinks {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, client, err := ln.ReadFromUDP(buf)
			if err != nil {
				return
			}
			mu.Lock()
			c := uplinks[client.String()]
			if c == nil {
				c, err = net.DialUDP("udp", nil, up)
				if err != nil {
					mu.Unlock()
					continue
				}
				uplinks[client.String()] = c
				wg.Add(1)
				go func() {
					defer wg.Done()
					b := make([]byte, 2048)
					for {
						n, err := c.Read(b)
						if err != nil {
							return
						}
						if !drop(false, toClient.Add(1), b[:n]) {
							_, _ = ln.WriteToUDP(b[:n], client)
						}
					}
				}()
			}
			mu.Unlock()
			if !drop(true, toBMC.Add(1), buf[:n]) {
				_, _ = c.Write(buf[:n])
			}
		}
	}()
	return ln.LocalAddr().(*net.UDPAddr).Port
}

// lossySequence runs every operation through a proxy that drops every
// fifth datagram each way: retransmission must carry the calls through,
// handshakes included (a lost RAKP 4 among them).
func lossySequence(t *testing.T, target drivers.BMC, bmcPort int) {
	t.Helper()
	target.Port = lossyProxy(t, bmcPort, func(_ bool, n int64, _ []byte) bool { return n%5 == 0 })
	d := newTestDriver(t, map[string]string{SettingTimeout: "60ms", SettingRetries: "8", SettingBackoff: "5ms"})
	for round := range 2 {
		ctx := ctxT(t, 30*time.Second)
		if info, err := d.Probe(ctx, target); err != nil || !info.Authorized {
			t.Fatalf("round %d Probe: %+v %v", round, info, err)
		}
		for _, step := range []struct {
			name string
			call func() (drivers.Result, error)
		}{
			{"PowerOn", func() (drivers.Result, error) { return d.PowerOn(ctx, target) }},
			{"SetBootDevice", func() (drivers.Result, error) {
				return d.SetBootDevice(ctx, target, drivers.BootDevice{Device: "pxe", Persistent: round%2 == 0})
			}},
			{"PowerOff", func() (drivers.Result, error) { return d.PowerOff(ctx, target) }},
		} {
			if r, err := step.call(); !bootSet(r, err) {
				t.Fatalf("round %d %s: %+v %v", round, step.name, r, err)
			}
		}
		if p, err := d.PowerStatus(ctx, target); err != nil || p != drivers.PowerOff {
			t.Fatalf("round %d PowerStatus: %q %v", round, p, err)
		}
	}
}

func TestPacketLossSimBMC(t *testing.T) {
	for _, proto := range []string{"lanplus", "lan"} {
		t.Run(proto, func(t *testing.T) {
			b, _ := startSim(t, bmc.Options{})
			lossySequence(t, simTarget(b, proto, 3), b.Addr().Port)
		})
	}
}

func TestPacketLossIPMISim(t *testing.T) {
	c := startIPMISim(t, 2)
	for i, proto := range []string{"lanplus", "lan"} {
		t.Run(proto, func(t *testing.T) {
			b := c.BMCs[i]
			lossySequence(t, realTarget(b, proto, 3), b.Port)
		})
	}
}

// dropFirst drops the first datagram in the given direction for which
// match holds, and counts what it dropped.
func dropFirst(toBMC bool, match func(pkt []byte) bool, dropped *atomic.Int32) func(bool, int64, []byte) bool {
	return func(dir bool, _ int64, pkt []byte) bool {
		if dir == toBMC && match(pkt) && dropped.CompareAndSwap(0, 1) {
			return true
		}
		return false
	}
}

// rmcpPayload reports an RMCP+ packet of the payload type.
func rmcpPayload(pt byte) func([]byte) bool {
	return func(p []byte) bool { return len(p) > 5 && p[4] == authRMCPPlus && p[5]&0x3f == pt }
}

// v15Command reports an IPMI v1.5 packet carrying the command.
func v15Command(cmd byte) func([]byte) bool {
	return func(p []byte) bool {
		if len(p) < 14 || p[4] == authRMCPPlus {
			return false
		}
		off := 13
		if p[4] != authNone {
			off += 16
		}
		return len(p) > off+6 && p[off+6] == cmd
	}
}

// TestHandshakeLoss loses one handshake message at a time, in either
// direction, on sim/bmc and ipmi_sim: the call still succeeds.
func TestHandshakeLoss(t *testing.T) {
	type bmcUnderTest struct {
		name string
		port int
		bmc  drivers.BMC
	}
	b, _ := startSim(t, bmc.Options{})
	var bmcs []bmcUnderTest
	for _, proto := range []string{"lanplus", "lan"} {
		bmcs = append(bmcs, bmcUnderTest{"sim/bmc " + proto, b.Addr().Port, simTarget(b, proto, 3)})
	}
	c := startIPMISim(t, 1)
	for _, proto := range []string{"lanplus", "lan"} {
		bmcs = append(bmcs, bmcUnderTest{"ipmi_sim " + proto, c.BMCs[0].Port, realTarget(c.BMCs[0], proto, 3)})
	}
	cases := []struct {
		name   string
		proto  string
		toBMC  bool
		packet func([]byte) bool
	}{
		{"Open Session Request", "lanplus", true, rmcpPayload(payloadOpenSessReq)},
		{"Open Session Response", "lanplus", false, rmcpPayload(payloadOpenSessRsp)},
		{"RAKP 1", "lanplus", true, rmcpPayload(payloadRAKP1)},
		{"RAKP 2", "lanplus", false, rmcpPayload(payloadRAKP2)},
		{"RAKP 3", "lanplus", true, rmcpPayload(payloadRAKP3)},
		{"RAKP 4", "lanplus", false, rmcpPayload(payloadRAKP4)},
		{"Get Session Challenge reply", "lan", false, v15Command(0x39)},
		{"Activate Session", "lan", true, v15Command(0x3a)},
		{"Activate Session reply", "lan", false, v15Command(0x3a)},
		{"Set Session Privilege Level reply", "lan", false, v15Command(0x3b)},
	}
	d := newTestDriver(t, map[string]string{SettingTimeout: "100ms", SettingRetries: "3", SettingBackoff: "5ms"})
	for _, u := range bmcs {
		for _, tc := range cases {
			if u.bmc.Protocol != tc.proto {
				continue
			}
			t.Run(u.name+"/"+tc.name, func(t *testing.T) {
				var dropped atomic.Int32
				target := u.bmc
				target.Port = lossyProxy(t, u.port, dropFirst(tc.toBMC, tc.packet, &dropped))
				p, err := d.PowerStatus(ctxT(t, 10*time.Second), target)
				if err != nil || (p != drivers.PowerOn && p != drivers.PowerOff) {
					t.Errorf("%q %v", p, err)
				}
				if dropped.Load() != 1 {
					t.Errorf("nothing was dropped: the test does not test")
				}
			})
		}
	}
}
