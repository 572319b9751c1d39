package yaml

// A file's value budget, checked before yaml.v3 builds its node tree.
//
// yaml.v3 builds the whole yaml.Node tree of a document before anything
// can look at it: about 160 bytes per node plus the Content slices, and
// the design Values built from it another 130. A flow list of one-digit
// numbers is a node per two bytes, so the tree alone costs ~164 bytes of
// memory per byte of input. Real designs hold one value per 7 to 25 bytes
// (a generated 10,000-node site: one per 7.9). So before parsing, a cheap
// pass over the bytes estimates the values a file holds, and a file
// denser than one value per bytesPerValue bytes (after a small allowance)
// is refused with a finding, without building anything.
//
// The estimate counts words (runs of bytes between blanks and the flow
// indicators , [ ] { }), the flow indicators , [ {, and once more every
// colon that ends a word (a key whose value may be empty) or follows a
// quote (a JSON-style key glued to its value). It parses nothing: quoted
// text, comments and block scalars are counted like the rest, which can
// only overcount. Every YAML node yaml.v3 builds (scalar, alias, list or
// mapping start, and the empty values implied by "-", "key:" and ",") owns
// one of the counted items, give or take a factor of two
// (FuzzValueEstimate checks it), so the estimate bounds the tree.
const (
	bytesPerValue  = 3
	valueAllowance = 64
	// expansionFactor: through aliases, a file may mean at most this many
	// times its value budget.
	expansionFactor = 4
)

// valueBudget is how many values a file of n bytes may hold.
func valueBudget(n int) int { return n/bytesPerValue + valueAllowance }

// overBudget estimates the values in data and returns the 1-based line at
// which the estimate passed fileLimit for the file or docLimit for one
// document (docLimit true), or 0 if it never did. A document starts at
// every line that begins with "---" or "..." as a word, as it does for
// yaml.v3 whenever it parses the file at all.
func overBudget(data []byte, fileLimit, docLimit int) (line int, perDoc bool) {
	count, doc := 0, 0
	line = 1
	inWord := false
	var prev byte
	for i, b := range data {
		switch b {
		case '\n':
			line++
			inWord = false
			if docMarker(data[i+1:]) {
				doc = 0
			}
		case ' ', '\t', '\r', ']', '}':
			inWord = false
		case ',', '[', '{':
			inWord = false
			count++
			doc++
		default:
			n := 0
			if !inWord {
				n++
				inWord = true
			}
			n += keyWeight(data, i, prev)
			count += n
			doc += n
		}
		if count > fileLimit || doc > docLimit {
			return line, doc > docLimit
		}
		prev = b
	}
	return 0, false
}

// docMarker reports whether a line starts with a document marker.
func docMarker(rest []byte) bool {
	if len(rest) < 3 || (string(rest[:3]) != "---" && string(rest[:3]) != "...") {
		return false
	}
	if len(rest) == 3 {
		return true
	}
	switch rest[3] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// keyWeight is what data[i] adds as a key indicator: a colon that ends a
// word or follows a quote is a key, one more value; at the end of a line
// the key's value is empty or a block below, so two more (a mapping of
// `key:` lines would otherwise be two nodes per count). A lone "?" is an
// explicit key, whose key and value may both be empty.
func keyWeight(data []byte, i int, prev byte) int {
	b := data[i]
	last := i+1 == len(data) || endsWord(data[i+1])
	switch {
	case b == ':' && (last || prev == '"' || prev == '\''):
		if lineEnds(data[i+1:]) {
			return 2
		}
		return 1
	case b == '?' && last && (i == 0 || endsWord(prev)):
		return 1
	}
	return 0
}

// lineEnds reports whether rest holds only blanks or a comment before the
// end of the line.
func lineEnds(rest []byte) bool {
	for _, b := range rest {
		switch b {
		case ' ', '\t':
		case '\n', '\r', '#':
			return true
		default:
			return false
		}
	}
	return true
}

func endsWord(b byte) bool {
	switch b {
	case ' ', '\t', '\r', '\n', ',', '[', ']', '{', '}':
		return true
	}
	return false
}
