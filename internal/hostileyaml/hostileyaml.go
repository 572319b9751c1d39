// Package hostileyaml writes YAML shaped to cost a parser as much memory
// or work per input byte as possible, for tests, fuzz seeds and the
// memory benchmark (scripts/bench-hostile.sh): huge flow lists, many tiny
// scalars, deep nesting, long keys, aliases and alias bombs.
package hostileyaml

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// shapes maps each shape to its writer; a writer fills b to about size bytes.
var shapes = map[string]func(b *bytes.Buffer, size int){
	// flow-list is the shape of the original report: `a: [0,0,0,...]`,
	// two bytes per value.
	"flow-list": func(b *bytes.Buffer, size int) {
		b.WriteString("a: [")
		b.WriteString(strings.Repeat("0,", max(0, (size-7+1)/2)))
		b.WriteString("0]\n")
	},
	// block-list: many tiny scalars, one per line.
	"block-list": func(b *bytes.Buffer, size int) {
		b.WriteString("a:\n")
		b.WriteString(strings.Repeat("- 0\n", (size-3+3)/4))
	},
	// nested: lines of flow mappings nested 150 deep (under the converter's
	// 200 levels), two bytes per level.
	"nested": func(b *bytes.Buffer, size int) {
		const depth = 150
		line := strings.Repeat("{a: ", depth) + "0" + strings.Repeat("}", depth) + "\n"
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(b, "k%d: %s", i, line)
		}
	},
	// long-keys: keys of 1,000 characters (under YAML's 1,024 for a
	// simple key).
	"long-keys": func(b *bytes.Buffer, size int) {
		pad := strings.Repeat("k", 990)
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(b, "%s%09d: 0\n", pad, i)
		}
	},
	// null-keys: short keys without values, two values per five bytes;
	// sparse enough in tokens to pass a word count, dense in values.
	"null-keys": func(b *bytes.Buffer, size int) {
		for i := 0; b.Len() < size; i++ {
			fmt.Fprintf(b, "p%d:\n", i)
			for j := 0; j < len(keyChars)*len(keyChars) && b.Len() < size; j++ {
				b.WriteString(" " + key2(j) + ":\n")
			}
		}
	},
	// dense-keys: flow mappings of five-character keys without values
	// ({aaaaa,aaaab,...}), 60,000 keys to a document: two values per six
	// bytes, as dense as a file may be (one estimated value per three
	// bytes) in documents under their limits, the worst input the parser
	// accepts.
	"dense-keys": func(b *bytes.Buffer, size int) {
		const perDoc = 60000
		for i := 0; b.Len() < size-3; i++ {
			switch {
			case i == 0:
				b.WriteString("x: {")
			case i%perDoc == 0:
				b.WriteString("k}\n---\nx: {")
			}
			b.WriteString(key5(i%perDoc) + ",")
		}
		b.WriteString("k}\n")
	},
	// aliases: one anchor and a flow list of aliases to it.
	"aliases": func(b *bytes.Buffer, size int) {
		b.WriteString("x: &a [0]\nb: [")
		for b.Len() < size-4 {
			b.WriteString("*a,")
		}
		b.WriteString("*a]\n")
	},
	// alias-bomb: nine levels of ten aliases each ("billion laughs"),
	// padded with a comment to size.
	"alias-bomb": func(b *bytes.Buffer, size int) {
		b.WriteString("l0: &l0 {k: v}\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 10), ","))
		}
		for b.Len() < size {
			b.WriteString("# padding\n")
		}
	},
}

const keyChars = "abcdefghijklmnopqrstuvwxyz0123456789"

func key5(j int) string {
	k := make([]byte, 5)
	for i := 4; i >= 0; i-- {
		k[i] = keyChars[j%len(keyChars)]
		j /= len(keyChars)
	}
	return string(k)
}

func key2(j int) string {
	return string([]byte{keyChars[j/len(keyChars)], keyChars[j%len(keyChars)]})
}

// Shapes lists the shapes Generate knows, sorted.
func Shapes() []string {
	var out []string
	for s := range shapes {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Generate returns about size bytes of YAML of the given shape.
func Generate(shape string, size int) ([]byte, error) {
	w, ok := shapes[shape]
	if !ok {
		return nil, fmt.Errorf("unknown shape %q (known: %s)", shape, strings.Join(Shapes(), ", "))
	}
	if size < 64 || size > 1<<31 {
		return nil, fmt.Errorf("size %d: want 64 bytes to 2 GiB", size)
	}
	var b bytes.Buffer
	b.Grow(size + 2048)
	w(&b, size)
	return b.Bytes(), nil
}
