package session

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/tenant"
)

// TestListAll: the operator view lists every principal's live sessions
// with their owners, newest first, while List keeps to the caller's own.
func TestListAll(t *testing.T) {
	m := testManager(t)
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	var ids []string
	for _, ctx := range []context.Context{alice, bob} {
		info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	var got []string
	for _, o := range m.ListAll() {
		got = append(got, o.Owner+" "+o.ID+" "+o.Status)
	}
	if diff := cmp.Diff([]string{"bob " + ids[1] + " active", "alice " + ids[0] + " active"}, got); diff != "" {
		t.Errorf("ListAll (-want +got)\n%s", diff)
	}
	if mine := m.List(alice); len(mine) != 1 || mine[0].ID != ids[0] {
		t.Errorf("alice's List: %+v", mine)
	}
}
