// Package labimage makes the lab's custom OS images: deterministic
// content (a header naming the image and its architecture, then padding
// derived from them) of any size, so that an example design can carry an
// image's SHA-256 and size while the file itself is generated where it is
// needed (the demo's image directory, a benchmark's temp dir) instead of
// being kept in git. The lab's MAAS treats the content as opaque bytes, as
// MAAS does; the header only lets a person recognise a lab image.
package labimage

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"sync"
)

// MaxSize bounds a generated image (4 GiB): the lab never needs more.
const MaxSize = 4 << 30

// Reader returns size bytes of the image's content.
func Reader(name, arch string, size int64) io.Reader {
	header := fmt.Sprintf("SLIPWAY-LAB-IMAGE name=%s arch=%s size=%d\n", name, arch, size)
	h := fnv.New64a()
	_, _ = io.WriteString(h, header)
	return io.LimitReader(io.MultiReader(strings.NewReader(header), &padding{state: h.Sum64() | 1}), size)
}

// Write creates path with the image's content and returns its SHA-256
// (hex). An existing file is replaced. An image of at most
// [maxKeptSize] is made once per process and kept: every lab start
// writes the example's 12 MiB image, and under the race detector making
// it again (each byte through the generator, the buffers and the hash)
// was a tenth of a test package's CPU.
func Write(path, name, arch string, size int64) (string, error) {
	if size <= 0 || size > MaxSize {
		return "", fmt.Errorf("labimage: size %d is outside 1..%d bytes", size, int64(MaxSize))
	}
	if size <= maxKeptSize {
		im := keptImage(name, arch, size)
		return im.sum, os.WriteFile(path, im.content, 0o600)
	}
	return writeStream(path, name, arch, size)
}

// writeStream writes the image's content to path as it is made.
func writeStream(path, name, arch string, size int64) (string, error) {
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, sum), 1<<20)
	if _, err := io.Copy(w, Reader(name, arch, size)); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// maxKeptSize is the largest image Write keeps in memory once made.
const maxKeptSize = 64 << 20

// made is an image's content and SHA-256 (hex), made once.
type made struct {
	once    sync.Once
	content []byte
	sum     string
}

// kept are the images made in this process, by name, arch and size.
var kept sync.Map // string -> *made

func keptImage(name, arch string, size int64) *made {
	v, _ := kept.LoadOrStore(fmt.Sprintf("%s\x00%s\x00%d", name, arch, size), &made{})
	im := v.(*made)
	im.once.Do(func() {
		im.content = make([]byte, size)
		_, _ = io.ReadFull(Reader(name, arch, size), im.content)
		s := sha256.Sum256(im.content)
		im.sum = hex.EncodeToString(s[:])
	})
	return im
}

// SHA256 is the SHA-256 (hex) of the image's content, without writing it.
func SHA256(name, arch string, size int64) string {
	sum := sha256.New()
	_, _ = io.Copy(sum, Reader(name, arch, size))
	return hex.EncodeToString(sum.Sum(nil))
}

// padding is an endless xorshift64 byte stream: the same bytes whatever
// the sizes of the reads.
type padding struct {
	state uint64
	pos   uint64
}

// Read fills b: a new state at every 8th byte, its bytes least
// significant first. Whole words are made in locals and a buffer on the
// stack and copied at once: every lab start writes the example's 12 MiB
// image, and in a race-instrumented test each store to the heap is
// checked on its own.
func (p *padding) Read(b []byte) (int, error) {
	n := len(b)
	st, pos := p.state, p.pos
	var buf [4096]byte
	for len(b) > 0 {
		if pos%8 != 0 || len(b) < 8 {
			if pos%8 == 0 {
				st = xorshift(st)
			}
			b[0] = byte(st >> (8 * (pos % 8)))
			b, pos = b[1:], pos+1
			continue
		}
		k := min(len(b)&^7, len(buf))
		for i := 0; i < k; i += 8 {
			st = xorshift(st)
			binary.LittleEndian.PutUint64(buf[i:i+8], st)
		}
		copy(b, buf[:k])
		b, pos = b[k:], pos+uint64(k)
	}
	p.state, p.pos = st, pos
	return n, nil
}

// xorshift is the xorshift64 step.
func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}
