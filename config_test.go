package tollgate

import "testing"

// Mail buttons decide as their person without signing in: where signing in
// must go through the provider, they are off unless asked for.
func TestMailButtonsFollowPasswords(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want bool
	}{
		{Config{}, true},
		{Config{NoPasswordLogin: true}, false},
		{Config{NoPasswordLogin: true, MailButtons: MailButtonsOn}, true},
		{Config{MailButtons: MailButtonsOff}, false},
	} {
		if got := c.cfg.mailButtons(); got != c.want {
			t.Errorf("%+v: buttons %v, want %v", c.cfg, got, c.want)
		}
	}
}
