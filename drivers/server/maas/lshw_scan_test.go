package maas

import (
	"reflect"
	"testing"
)

// sameAsXML fails t unless lshwScan reads doc (when read is true) into
// the tree encoding/xml gives, or gives it up (when read is false).
func sameAsXML(t *testing.T, doc []byte, read bool) {
	t.Helper()
	if ok := scanAgrees(t, doc); ok != read {
		t.Fatalf("lshwScan read it: %v, want %v", ok, read)
	}
}

// scanAgrees answers whether lshwScan reads doc, and fails t when it
// does to another tree than encoding/xml's.
func scanAgrees(t *testing.T, doc []byte) bool {
	t.Helper()
	got, ok := lshwScan(doc)
	if !ok {
		return false
	}
	want, err := lshwTopsXML(doc)
	if err != nil {
		t.Fatalf("lshwScan read a document encoding/xml refuses (%v)", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lshwScan's tree differs from encoding/xml's:\n%+v\n%+v", got, want)
	}
	return true
}

// TestLSHWScanReadsLSHW: the lab's documents and the checked-in lshw
// output are read by lshwScan, to encoding/xml's tree (the rollout's
// speed depends on the first; TestParseLSHWRealOutput checks this
// machine's lshw).
func TestLSHWScanReadsLSHW(t *testing.T) {
	for _, f := range []string{"lshw-lab.xml", "lshw-gpu.xml"} {
		t.Run(f, func(t *testing.T) { sameAsXML(t, readTestdata(t, f), true) })
	}
}

// TestLSHWScanGivesUp: what lshwScan does not read goes to encoding/xml;
// what it reads is read as encoding/xml reads it.
func TestLSHWScanGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		read      bool
	}{
		{"named entities", `<list><node id="a&amp;b"><vendor>AT&amp;T &lt;x&gt; &apos;&quot;</vendor></node></list>`, true},
		{"field twice: the last", `<node><product>a</product><product>b</product></node>`, true},
		{"pieces with references", `<node><vendor>a&amp;<!--x-->b&lt;<?p q?>c</vendor><product>x<y/>y</product></node>`, true},
		{"own text only", `<node><product>a<!-- c -->b<x>skipped</x>c</product></node>`, true},
		{"settings of two configurations", `<node><configuration><setting id="a" value="1"/></configuration><configuration><setting id="b" value="2"><x/></setting><other/></configuration></node>`, true},
		{"empty fields", `<node><logicalname/><logicalname>x</logicalname><serial/></node>`, true},
		{"single quotes, blanks", "<node  id = 'x'\t>\n<businfo >pci@0000:00:01.0</businfo ></node >", true},
		{"numeric reference", `<node><vendor>&#65;</vendor></node>`, false},
		{"unknown entity", `<node><vendor>&nbsp;</vendor></node>`, false},
		{"CDATA", `<node><vendor><![CDATA[x]]></vendor></node>`, false},
		{"DOCTYPE", `<!DOCTYPE list><list/>`, false},
		{"namespace", `<x:node xmlns:x="u"><x:vendor>v</x:vendor></x:node>`, false},
		{"encoding", `<?xml version="1.0" encoding="ISO-8859-1"?><node/>`, false},
		{"version", `<?xml version="1.1"?><node/>`, false},
		{"non-ASCII", "<node><vendor>caf\u00e9</vendor></node>", false},
		{"carriage return", "<node><vendor>a\r\nb</vendor></node>", false},
		{"mismatched end", `<node><vendor>a</product></node>`, false},
		{"unquoted attribute", `<node id=x/>`, false},
		{"attributes not apart", `<node id="a"class="b"/>`, false},
		{"< in attribute", `<node id="<"/>`, false},
		{"]]> in text", `<node><vendor>a]]>b</vendor></node>`, false},
		{"comment with --", `<node><!-- a -- b --></node>`, false},
		{"other root", `<lshw><node/></lshw>`, false},
		{"unclosed", `<list><node>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) { sameAsXML(t, []byte(tc.doc), tc.read) })
	}
}

// FuzzLSHWScan: whatever lshwScan reads, encoding/xml reads to the same
// tree.
func FuzzLSHWScan(f *testing.F) {
	f.Add(readTestdata(f, "lshw-lab.xml"))
	f.Add(readTestdata(f, "lshw-gpu.xml"))
	f.Add([]byte(`<?xml version="1.0" standalone="yes" ?><!-- c --><list><node id="a" class="system"><product>x&amp;y</product><configuration><setting id="cores" value="4" /></configuration><node class="network"><logicalname>eth0</logicalname></node></node></list>`))
	f.Fuzz(func(t *testing.T, doc []byte) { scanAgrees(t, doc) })
}

// BenchmarkLSHW reads the lab's document of a generated machine: the
// driver's parse (the scanner and the walk) against encoding/xml's tree
// alone. Run with -benchmem.
func BenchmarkLSHW(b *testing.B) {
	doc := readTestdata(b, "lshw-lab.xml")
	b.Run("parseLSHW", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseLSHW(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-xml", func(b *testing.B) {
		for b.Loop() {
			if _, err := lshwTopsXML(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
