package images

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// noisy returns a PNG of w×h random pixels (incompressible, so it is large).
func noisy(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(r.IntN(256)), uint8(r.IntN(256)), uint8(r.IntN(256)), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFit(t *testing.T) {
	big := noisy(t, 400, 300)
	cases := []struct {
		name   string
		data   []byte
		mime   string
		max    int
		ok     bool
		sameIn bool
	}{
		{"small stays", big, "image/png", len(big), true, true},
		{"png downscaled", big, "image/png", len(big) / 4, true, false},
		{"svg cannot", bytes.Repeat([]byte("<svg/>"), 100), "image/svg+xml", 10, false, false},
		{"garbage cannot", bytes.Repeat([]byte{1}, 100), "image/png", 10, false, false},
	}
	for _, c := range cases {
		out, mime, ok := Fit(c.data, c.mime, c.max)
		if ok != c.ok {
			t.Fatalf("%s: ok = %v", c.name, ok)
		}
		if !ok {
			continue
		}
		if len(out) > c.max || mime != "image/png" {
			t.Fatalf("%s: %d bytes (max %d), %s", c.name, len(out), c.max, mime)
		}
		if bytes.Equal(out, c.data) != c.sameIn {
			t.Fatalf("%s: unchanged = %v", c.name, !c.sameIn)
		}
		img, err := png.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		// Aspect ratio is kept.
		if b := img.Bounds(); b.Dx()*3 < b.Dy()*4-8 || b.Dx()*3 > b.Dy()*4+8 {
			t.Fatalf("%s: aspect lost: %v", c.name, b)
		}
	}
}
