package tollgate

import (
	"os"
	"regexp"
	"testing"
	"time"
)

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

// docker compose stop kills a server that has not stopped within its stop
// grace: the grace must outlast the server's own shutdown timeout, or a
// stop cuts steps and requests off mid-way.
func TestComposeStopGraceOutlastsTheShutdown(t *testing.T) {
	compose, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*stop_grace_period:\s*(\S+)\s*$`).FindSubmatch(compose)
	if m == nil {
		t.Fatal("compose.yaml sets no stop_grace_period: docker compose's default (10s) is shorter than the shutdown timeout")
	}
	grace, err := time.ParseDuration(string(m[1]))
	if err != nil || grace <= DefaultShutdownTimeout {
		t.Errorf("stop_grace_period %s: want more than the shutdown timeout, %s", m[1], DefaultShutdownTimeout)
	}
}
