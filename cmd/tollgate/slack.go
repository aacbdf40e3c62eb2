package main

import (
	"errors"

	"github.com/tollgatehq/tollgate"
)

// slackConfig connects serve to a Slack app.
type slackConfig struct {
	botToken, signingSecret, apiURL string
}

func (f *envFlags) slack(c *slackConfig) {
	f.String(&c.botToken, "slack-bot-token", "TOLLGATE_SLACK_BOT_TOKEN", "", "bot token (xoxb-…) of the Slack app that posts requests whose workflow or step names a slack target (prefer the environment variable to the flag)")
	f.String(&c.signingSecret, "slack-signing-secret", "TOLLGATE_SLACK_SIGNING_SECRET", "", "signing secret of that Slack app, which checks that decisions sent to <public URL>/slack/interactions come from Slack")
	f.String(&c.apiURL, "slack-api-url", "TOLLGATE_SLACK_API_URL", "", "Slack's Web API address (default https://slack.com/api/)")
}

// check refuses half a Slack configuration.
func (c slackConfig) check() error {
	if (c.botToken == "") != (c.signingSecret == "") {
		return errors.New("--slack-bot-token and --slack-signing-secret go together: set both, or neither")
	}
	return nil
}

// config is the Slack app c configures, or nil.
func (c slackConfig) config() *tollgate.SlackConfig {
	if c.botToken == "" {
		return nil
	}
	return &tollgate.SlackConfig{BotToken: c.botToken, SigningSecret: c.signingSecret, APIURL: c.apiURL}
}
