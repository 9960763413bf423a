package tenant

import (
	"context"
	"testing"
)

func TestPrincipal(t *testing.T) {
	bg := context.Background()
	tests := []struct {
		name  string
		ctx   context.Context
		want  string
		owner string
		owns  bool
	}{
		{"zero context is local", bg, Local, "", true},
		{"empty principal is local", With(bg, ""), Local, Local, true},
		{"named principal", With(bg, "alice"), "alice", "alice", true},
		{"other owner refused", With(bg, "alice"), "alice", "bob", false},
		{"legacy empty owner is not alice's", With(bg, "alice"), "alice", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := From(tt.ctx); got != tt.want {
				t.Errorf("From = %q, want %q", got, tt.want)
			}
			if got := Owns(tt.ctx, tt.owner); got != tt.owns {
				t.Errorf("Owns(%q) = %v, want %v", tt.owner, got, tt.owns)
			}
		})
	}
}

func TestTag(t *testing.T) {
	if Tag(Local) != "" || Tag("") != "" {
		t.Errorf("Local must keep the untagged layout")
	}
	a, b := Tag("alice"), Tag("bob")
	if len(a) != 16 || a == b || a != Tag("alice") {
		t.Errorf("Tag(alice)=%q Tag(bob)=%q: want distinct stable 16-hex tags", a, b)
	}
	if Tag("../../etc") == "../../etc" || len(Tag("a/b")) != 16 {
		t.Errorf("tags must be path-safe")
	}
}
