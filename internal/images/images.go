// Package images fits images under a byte budget for inline return (MCP
// image content; which files are images is package mimetype's answer): PNG,
// JPEG and GIF too large
// are decoded and downscaled (golang.org/x/image/draw, bilinear) until they
// fit; what cannot be fitted (SVG, undecodable data) is left to the caller to
// return as a link instead.
package images

import (
	"bytes"
	"image"
	_ "image/gif" // GIF decoding for image.Decode
	"image/jpeg"
	"image/png"
	"math"

	"golang.org/x/image/draw"
)

// Fit returns data unchanged when it is at most max bytes; otherwise a
// downscaled re-encoding (PNG stays PNG, JPEG stays JPEG, GIF becomes PNG)
// with its MIME type, or ok=false when the image cannot be made to fit.
func Fit(data []byte, mime string, max int) (out []byte, outMIME string, ok bool) {
	if len(data) <= max {
		return data, mime, true
	}
	if mime != "image/png" && mime != "image/jpeg" && mime != "image/gif" {
		return nil, "", false
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, "", false
	}
	size := len(data)
	b := src.Bounds()
	w, h := b.Dx(), b.Dy()
	for range 6 {
		f := math.Sqrt(float64(max)/float64(size)) * 0.9
		w, h = max1(int(float64(w)*f)), max1(int(float64(h)*f))
		dst := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
		enc, encMIME := encode(dst, mime)
		if len(enc) <= max {
			return enc, encMIME, true
		}
		size = len(enc)
	}
	return nil, "", false
}

func encode(img image.Image, mime string) ([]byte, string) {
	var buf bytes.Buffer
	if mime == "image/jpeg" {
		_ = jpeg.Encode(&buf, img, &jpeg.Options{Quality: 85})
		return buf.Bytes(), mime
	}
	_ = png.Encode(&buf, img)
	return buf.Bytes(), "image/png"
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
