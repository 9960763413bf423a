// Package sourcemap reads the "mappings" of a version 3 source map (as
// esbuild writes them) and maps a position of the generated code back to its
// source. Only what stack traces need is kept: per generated position, the
// source line and column (names and the source index are ignored; the maps
// it reads have one source).
package sourcemap

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Map is a parsed source map.
type Map struct {
	// lines[g] are the segments of generated line g (0-based), sorted by
	// generated column.
	lines [][]segment
}

type segment struct{ genCol, srcLine, srcCol int }

// Parse reads a source map's JSON.
func Parse(data []byte) (*Map, error) {
	var raw struct {
		Version  int    `json:"version"`
		Mappings string `json:"mappings"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("source map: %w", err)
	}
	if raw.Version != 3 {
		return nil, fmt.Errorf("source map: version %d, want 3", raw.Version)
	}
	m := &Map{}
	var srcLine, srcCol, src int
	for _, line := range strings.Split(raw.Mappings, ";") {
		var segs []segment
		genCol := 0
		for _, field := range strings.Split(line, ",") {
			if field == "" {
				continue
			}
			v, err := decodeVLQ(field)
			if err != nil {
				return nil, err
			}
			genCol += v[0]
			if len(v) < 4 {
				continue // a generated position with no source
			}
			src, srcLine, srcCol = src+v[1], srcLine+v[2], srcCol+v[3]
			segs = append(segs, segment{genCol, srcLine, srcCol})
		}
		sort.SliceStable(segs, func(i, j int) bool { return segs[i].genCol < segs[j].genCol })
		m.lines = append(m.lines, segs)
	}
	return m, nil
}

// Lookup maps a 0-based generated line and column to the 0-based source
// line and column of the segment covering it (the last one starting at or
// before col on that line); ok is false when nothing on the line maps.
func (m *Map) Lookup(line, col int) (srcLine, srcCol int, ok bool) {
	if line < 0 || line >= len(m.lines) {
		return 0, 0, false
	}
	segs := m.lines[line]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].genCol > col }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return 0, 0, false
		}
		i = 0 // before the first segment: the line's first mapping
	}
	return segs[i].srcLine, segs[i].srcCol, true
}

const base64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// decodeVLQ decodes one segment: base64 VLQ numbers, 5 bits a digit with
// a continuation bit, sign in the lowest bit.
func decodeVLQ(s string) ([]int, error) {
	var out []int
	value, shift := 0, 0
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(base64Digits, s[i])
		if d < 0 {
			return nil, fmt.Errorf("source map: bad mapping character %q", s[i])
		}
		value += (d & 31) << shift
		if d&32 != 0 {
			shift += 5
			if shift > 30 {
				return nil, errors.New("source map: mapping number too large")
			}
			continue
		}
		n := value >> 1
		if value&1 != 0 {
			n = -n
		}
		out = append(out, n)
		value, shift = 0, 0
	}
	if shift != 0 {
		return nil, errors.New("source map: truncated mapping")
	}
	return out, nil
}
