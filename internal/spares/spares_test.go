package spares

import (
	"testing"

	"github.com/codexec/codexec/internal/driver"
	"github.com/google/go-cmp/cmp"
)

func TestBestSpare(t *testing.T) {
	tests := []struct {
		name     string
		reserves []int64
		need     int64
		want     int
	}{
		{"only one", []int64{0}, 100, 0},
		{"smallest that fits", []int64{500, 0, 200, 300}, 150, 2},
		{"none fits: the largest", []int64{10, 40, 20}, 100, 1},
		{"nothing needed: the smallest", []int64{30, 0, 10}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ready []*spare[int]
			for _, r := range tt.reserves {
				ready = append(ready, &spare[int]{reserve: driver.Reserve{Objects: r}})
			}
			if got := bestSpare(ready, tt.need); got != tt.want {
				t.Errorf("bestSpare(%v, %d) = %d, want %d", tt.reserves, tt.need, got, tt.want)
			}
		})
	}
}

func TestReserveFor(t *testing.T) {
	tests := []struct {
		lang       string
		size, mem  int64
		want       driver.Reserve
		whyNoneNot string
	}{
		{"python", 10 << 20, 0, driver.Reserve{Objects: 50 << 20, Inbox: 10 << 20}, ""},
		{"python", 10 << 20, 120 << 20, driver.Reserve{Objects: 25 << 20, Inbox: 5 << 20}, "a quarter of the memory limit"},
		{"python", 1 << 30, 0, driver.Reserve{Objects: (256 << 20) * 5 / 6, Inbox: (256 << 20) / 6}, "256 MiB at most"},
		{"python", 0, 0, driver.Reserve{}, "no checkpoint expected"},
		{"node", 10 << 20, 0, driver.Reserve{}, "V8 sizes its own heap"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, ReserveFor(tt.lang, tt.size, tt.mem)); diff != "" {
			t.Errorf("ReserveFor(%s, %d) with a limit of %d (%s): -want +got\n%s", tt.lang, tt.size, tt.mem, tt.whyNoneNot, diff)
		}
	}
}
