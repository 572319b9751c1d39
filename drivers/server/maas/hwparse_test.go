package maas

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/slipway-dev/slipway/drivers"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseLSHW(t *testing.T) {
	f, err := parseLSHW(readTestdata(t, "lshw-gpu.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := hwFacts{
		System:   drivers.System{Vendor: "Dell Inc.", Product: "PowerEdge XE9680 (SKU=0AFF;ModelName=PowerEdge XE9680)", Serial: "9XJ4K83"},
		Firmware: drivers.Firmware{BIOSVendor: "Dell Inc.", BIOSVersion: "2.2.8", BIOSDate: "03/14/2024"},
		CPU:      drivers.CPU{Model: "Intel(R) Xeon(R) Platinum 8480+", Sockets: 2, Cores: 112, Threads: 224},
		GPUs: []drivers.PCIDevice{
			{Vendor: "NVIDIA Corporation", Model: "GH100 [H100 SXM5 80GB]", Address: "0000:1b:00.0"},
			{Vendor: "NVIDIA Corporation", Model: "GH100 [H100 SXM5 80GB]", Address: "0000:ca:00.0", NUMANode: 1},
		},
		NICs: []hwNIC{
			{Name: "enp25s0np0", MAC: "a0:88:c2:1e:00:10", PCI: "0000:19:00.0", Driver: "mlx5_core", Firmware: "28.39.1002 (DEL0000000031)", Vendor: "Mellanox Technologies", Product: "MT2910 Family [ConnectX-7]", Link: "yes"},
			{Name: "ens3f0", MAC: "b4:96:91:aa:00:01", PCI: "0000:cb:00.0", Driver: "ice", Firmware: "4.40 0x8001c967 1.3534.0", Vendor: "Intel Corporation", Product: "Ethernet Controller E810-C for QSFP", Link: "no"},
		},
		DiskBus: map[string]string{"ng0n1": "0000:5e:00.0", "nvme0n1": "0000:5e:00.0", "sda": "2:0.0.0"},
	}
	if d := cmp.Diff(want, f); d != "" {
		t.Errorf("parseLSHW (-want +got):\n%s", d)
	}
}

func TestParseLSHWCases(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		err       string
		check     func(t *testing.T, f hwFacts)
	}{
		{name: "empty", doc: "  "},
		{name: "not xml", doc: "{\"lshw\": 1}", err: "parse lshw"},
		{name: "wrong root", doc: "<lldp/>", err: "not <list> or <node>"},
		{name: "single root node, DMI placeholders dropped", doc: `<node id="x" class="system"><vendor>To Be Filled By O.E.M.</vendor><product>X11DPi</product><serial>Unknown</serial>
			<node id="core" class="bus"><node id="cpu:0" class="processor"><product>AMD EPYC 9654</product><configuration><setting id="cores" value="96"/><setting id="threads" value="192"/></configuration></node>
			<node id="cpu:1" class="processor" disabled="true"><description>CPU [empty]</description></node></node></node>`,
			check: func(t *testing.T, f hwFacts) {
				if f.System != (drivers.System{Product: "X11DPi"}) {
					t.Errorf("system %+v", f.System)
				}
				if f.CPU != (drivers.CPU{Model: "AMD EPYC 9654", Sockets: 1, Cores: 96, Threads: 192}) {
					t.Errorf("cpu %+v (an empty socket counted?)", f.CPU)
				}
			}},
		{name: "accelerator classes", doc: `<list><node class="system"><node class="bus">
			<node class="processor"><description>Processing accelerators</description><product>Gaudi2</product><vendor>Habana Labs Ltd.</vendor><businfo>pci@0000:33:00.0</businfo></node>
			<node class="generic"><description>Processing accelerators</description><product>MI300X</product><vendor>AMD</vendor><businfo>pci@0000:44:00.0</businfo></node>
			<node class="display"><product>ASPEED Graphics Family</product><vendor>ASPEED Technology, Inc.</vendor><businfo>pci@0000:02:00.0</businfo></node>
			<node class="display"><product>no bus</product></node>
			</node></node></list>`,
			check: func(t *testing.T, f hwFacts) {
				if len(f.GPUs) != 2 || f.GPUs[0].Model != "Gaudi2" || f.GPUs[1].Address != "0000:44:00.0" {
					t.Errorf("gpus %+v", f.GPUs)
				}
				if f.CPU.Sockets != 0 {
					t.Errorf("a PCI co-processor counted as a socket: %+v", f.CPU)
				}
			}},
		{name: "too large", doc: "<list>" + strings.Repeat(" ", maxLSHWBytes) + "</list>", err: "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseLSHW([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

func TestParseLSHWBoundsDevices(t *testing.T) {
	var b strings.Builder
	b.WriteString("<list><node class=\"system\">")
	for i := 0; i < maxPCIDevices+50; i++ {
		b.WriteString(`<node class="display"><product>GPU</product><businfo>pci@0000:01:00.0</businfo></node>`)
	}
	b.WriteString("</node></list>")
	f, err := parseLSHW([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.GPUs) != maxPCIDevices {
		t.Errorf("%d GPUs kept, want the bound %d", len(f.GPUs), maxPCIDevices)
	}
}

func TestParseLLDP(t *testing.T) {
	got, err := parseLLDP(readTestdata(t, "lldp.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]drivers.Neighbor{
		"enp25s0np0": {Switch: "leaf-r07-a", Port: "Ethernet12", ChassisID: "0c:42:a1:5e:00:01"},
		"ens3f0":     {Switch: "leaf-r07-b", Port: "Ethernet48", ChassisID: "0c:42:a1:5e:00:02"}, // MAC port ID: the description
		"eno1":       {Switch: "0c:42:a1:5e:00:03", Port: "17", ChassisID: "0c:42:a1:5e:00:03"},  // no system name: the chassis ID
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("parseLLDP (-want +got):\n%s", d)
	}
}

func TestParseLLDPCases(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		n         int
		err       string
	}{
		{name: "empty", doc: ""},
		{name: "no neighbours", doc: `<?xml version="1.0" encoding="UTF-8"?><lldp label="LLDP neighbors"/>`},
		{name: "no port", doc: `<lldp><interface name="eth0"><chassis><name>sw</name></chassis></interface></lldp>`},
		{name: "duplicate interface keeps the first", doc: `<lldp><interface name="eth0"><chassis><name>a</name></chassis><port><id type="ifname">1</id></port></interface><interface name="eth0"><chassis><name>b</name></chassis><port><id>2</id></port></interface></lldp>`, n: 1},
		{name: "not lldp", doc: `<list/>`, err: "parse lldp"},
		{name: "broken", doc: `<lldp><interface name="x">`, err: "parse lldp"},
		{name: "too many", doc: "<lldp>" + strings.Repeat(`<interface name="x"/>`, maxLLDPPorts+1) + "</lldp>", err: "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLLDP([]byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(got) != tc.n {
				t.Fatalf("got %v, %v; want %d neighbours", got, err, tc.n)
			}
			if tc.n == 1 && got["eth0"].Switch != "a" {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func FuzzParseLSHW(f *testing.F) {
	f.Add(readTestdata(f, "lshw-gpu.xml"))
	f.Add([]byte(`<node class="system"><node class="processor"><product>x</product></node></node>`))
	f.Add([]byte(`<list><node class="display"><businfo>pci@</businfo></node></list>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		hf, err := parseLSHW(doc)
		if err != nil {
			return
		}
		if len(hf.GPUs) > maxPCIDevices || len(hf.NICs) > maxHWNICs {
			t.Fatalf("bounds broken: %d GPUs, %d NICs", len(hf.GPUs), len(hf.NICs))
		}
		for _, g := range hf.GPUs {
			if g.Address == "" || g.NUMANode < 0 {
				t.Fatalf("GPU %+v", g)
			}
		}
		if hf.CPU.Sockets < 0 || hf.CPU.Cores < 0 || hf.CPU.Threads < 0 {
			t.Fatalf("cpu %+v", hf.CPU)
		}
	})
}

func FuzzParseLLDP(f *testing.F) {
	f.Add(readTestdata(f, "lldp.xml"))
	f.Add([]byte(`<lldp><interface name="a"><chassis><id type="mac">X</id></chassis><port><descr>p</descr></port></interface></lldp>`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, err := parseLLDP(doc)
		if err != nil {
			return
		}
		if len(got) > maxLLDPPorts {
			t.Fatalf("%d neighbours", len(got))
		}
		for name, nb := range got {
			if name == "" || nb.Switch == "" || nb.Port == "" {
				t.Fatalf("%q: %+v", name, nb)
			}
		}
	})
}
