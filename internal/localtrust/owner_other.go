//go:build !unix

package localtrust

import "io/fs"

// unixOwners: no Unix owners and modes here; Check reports only a
// missing file.
const unixOwners = false

func ownerOf(fs.FileInfo) int { return -1 }
